"""Writing a round's requests out as the vendor's batch input: streamed to a temporary JSONL file, a vendor batch
started each time the file reaches the vendor's limit (requests or bytes), so no round is ever held in memory."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from guardrail.vendors.batches import BatchApi

__all__ = ["Spool"]


class Spool:
    """Lines of one round. :meth:`add` writes one; :meth:`close` starts the last vendor batch. ``started`` is
    called with each vendor batch id as soon as it exists (the job records it at once)."""

    def __init__(self, api: BatchApi, client: Any, metadata: Mapping[str, str],
                 started: Callable[[str], object], *, max_items: int | None = None) -> None:
        self.api, self.client, self.metadata, self.started = api, client, metadata, started
        self.max_items = min(max_items or api.max_items, api.max_items)
        self.count = 0  # lines in the round so far
        self._dir = tempfile.TemporaryDirectory(prefix="guardrail-batch-")
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._lines = 0
        self._bytes = 0

    def add(self, custom_id: str, kwargs: Mapping[str, Any]) -> None:
        line = self.api.line(custom_id, kwargs)
        if self._file is not None and (self._lines >= self.max_items
                                       or self._bytes + len(line) > self.api.max_bytes):
            self._flush()
        if self._file is None:
            self._path = Path(self._dir.name) / f"input-{self.count}.jsonl"
            self._file = self._path.open("wb")
        self._file.write(line)
        self._lines += 1
        self._bytes += len(line)
        self.count += 1

    def _flush(self) -> None:
        if self._file is None or self._path is None:
            return
        self._file.close()
        self._file = None
        if self._lines:
            self.started(self.api.submit(self.client, self._path, metadata=self.metadata))
        self._path.unlink()
        self._lines = self._bytes = 0

    def close(self) -> None:
        """Start the vendor batch of the lines not yet sent, and remove the temporary files."""
        try:
            self._flush()
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary files without sending anything more."""
        if self._file is not None:
            self._file.close()
            self._file = None
        with contextlib.suppress(OSError):
            self._dir.cleanup()
