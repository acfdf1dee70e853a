"""Finding and reading the shared test corpora (MaskBench, JSONTestSuite) that tests and benches both use.

The corpora live outside the repository, in the project's shared folder: ``$GUARDRAIL_CORPORA/<name>``, else
``shared/corpora/<name>`` next to the checkout, else ``/work/shared/corpora/<name>``. Only the standard
library is imported here, so test support stays cheap to import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["find_corpus", "load"]


def find_corpus(name: str = "maskbench", marker: str | None = None) -> Path | None:
    """The directory of corpus ``name`` (holding ``marker`` when given); None if no root has it."""
    here = Path(__file__).resolve().parents[2]
    for root in (os.environ.get("GUARDRAIL_CORPORA"), here.parent / "shared" / "corpora", "/work/shared/corpora"):
        if not root:
            continue
        found = Path(root) / name
        if found.is_dir() and (marker is None or (found / marker).is_file()):
            return found
    return None


def load(directory: Path | str) -> dict[str, list[dict[str, Any]]]:
    """MaskBench entries by collection, in file order (each ``{"id", "collection", "schema", "tests"}``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(Path(directory).glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    entry = json.loads(line)
                    out.setdefault(entry["collection"], []).append(entry)
    return out
