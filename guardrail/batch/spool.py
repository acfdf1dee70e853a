"""A round's requests written out as the vendor's batch input: streamed to temporary JSONL files, a new file each
time one reaches the vendor's limit (requests or bytes), so no round is ever held in memory. The caller sends
each full file as it is handed over (a vendor batch per file) and the file is removed once sent."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from guardrail.vendors.batches import BatchApi

__all__ = ["Spool", "spooled"]


class Spool:
    """Lines of one round. :meth:`add` writes one and hands over the previous file when it was full;
    :meth:`close` hands over the last one. The caller sends each file handed over, then :meth:`sent` removes it."""

    def __init__(self, api: BatchApi, *, max_items: int | None = None) -> None:
        self.api = api
        self.max_items = min(max_items or api.max_items, api.max_items)
        self.count = 0  # lines in the round so far
        self._dir = tempfile.TemporaryDirectory(prefix="guardrail-batch-")
        self._file: IO[bytes] | None = None
        self._ids: IO[str] | None = None  # the custom_ids of the file, one a line
        self._path: Path | None = None
        self._lines = 0
        self._bytes = 0

    def add(self, custom_id: str, kwargs: Mapping[str, Any]) -> Path | None:
        """Write one request; the previous file when this line did not fit in it (to send now), else ``None``."""
        line = self.api.line(custom_id, kwargs)
        full = None
        if self._file is not None and (self._lines >= self.max_items
                                       or self._bytes + len(line) > self.api.max_bytes):
            full = self._finish()
        if self._file is None:
            self._path = Path(self._dir.name) / f"input-{self.count}.jsonl"
            self._file = self._path.open("wb")
            self._ids = self._path.with_suffix(".ids").open("w", encoding="utf-8")
        self._file.write(line)
        assert self._ids is not None
        self._ids.write(custom_id + "\n")
        self._lines += 1
        self._bytes += len(line)
        self.count += 1
        return full

    def close(self) -> Path | None:
        """The last file to send (``None`` when no line is waiting)."""
        return self._finish()

    def _finish(self) -> Path | None:
        if self._file is None or self._path is None:
            return None
        self._file.close()
        self._close_ids()
        self._file = None
        path, lines = self._path, self._lines
        self._lines = self._bytes = 0
        return path if lines else None

    def _close_ids(self) -> None:
        if self._ids is not None:
            self._ids.close()
            self._ids = None

    @staticmethod
    def ids(path: Path) -> Iterator[str]:
        """The custom_ids of a file handed over, in order."""
        with path.with_suffix(".ids").open(encoding="utf-8") as ids:
            for line in ids:
                yield line.rstrip("\n")

    @staticmethod
    def sent(path: Path) -> None:
        """Remove a file once its vendor batch exists."""
        path.unlink(missing_ok=True)
        path.with_suffix(".ids").unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove every temporary file."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._close_ids()
        with contextlib.suppress(OSError):
            self._dir.cleanup()


def spooled(api: BatchApi, asks: Iterable[tuple[str, Mapping[str, Any]]]) -> Iterator[Path]:
    """The input files of one round: each ask (custom_id, request keywords) written to a :class:`Spool`, every
    file yielded as soon as it is full, then the last; what was not yielded is discarded."""
    spool = Spool(api)
    try:
        for custom_id, kwargs in asks:
            full = spool.add(custom_id, kwargs)
            if full is not None:
                yield full
        last = spool.close()
        if last is not None:
            yield last
    finally:
        spool.discard()
