"""A store in one SQLite file: persistent, and shared by every process on one host that opens the same path."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

from guardrail.errors import StoreUnavailable
from guardrail.store.base import (
    Counter,
    add_exact,
    check_counter,
    check_counters,
    check_key,
    check_ttl,
    format_number,
    parse_decimal,
    parse_number,
    translated,
)

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")

_TABLE = "guardrail_store"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL NOT NULL)"
    " WITHOUT ROWID",
    f"CREATE INDEX IF NOT EXISTS {_TABLE}_expires_at ON {_TABLE} (expires_at)",
)
#: Expired rows are deleted in bulk once every this many writes made through one store object.
_SWEEP_EVERY = 1000


class SQLiteStore:
    """A :class:`~guardrail.store.Store` in a SQLite file (one table: key, value, expires_at).

    Every write is one ``BEGIN IMMEDIATE`` transaction, so each operation is atomic across the threads of this
    process and across every other process using the same file. The file is put in WAL mode; ``timeout`` is the
    busy timeout, how long a write waits for another process's write lock before ``sqlite3.OperationalError``
    ("database is locked") is raised. Within one process, operations share one connection behind a lock (they take
    microseconds, and it keeps lock contention between processes only). A process forked after the store was opened
    gets a fresh connection on first use instead of the inherited one.

    Expiry uses the wall clock because rows outlive the process. ``synchronous=NORMAL``: a commit survives a crash of
    the process; after a power loss or OS crash the last commits may be lost (never a corrupt file).
    Use a local disk, not a network file system, and a stable path: the file *is* the idempotency memory.

    Failures are typed: a file locked past the timeout, read-only, unopenable or full raises
    :class:`~guardrail.errors.StoreUnavailable`; other SQLite errors :class:`~guardrail.errors.StoreError`. Each
    operation first checks that the path still names the file this process opened: a file deleted or replaced under
    a running process raises :class:`~guardrail.errors.StoreUnavailable` instead of writing into the unlinked file.
    New files use ``auto_vacuum = INCREMENTAL``, and the periodic sweep of expired rows returns freed pages to the
    file system, so the file shrinks as entries expire.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        check_ttl(timeout, "timeout")
        self.path = Path(path)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._writes = 0
        self._closed = False
        self._identity: tuple[int, int] | None = None
        with self._lock, self._translated("open"):
            conn = self._connection()
            # Creating the table twice at once from two processes is harmless: IF NOT EXISTS under the write lock.
            self._transaction(conn, lambda: [conn.execute(statement) for statement in _SCHEMA])

    @staticmethod
    def _translated(operation: str) -> AbstractContextManager[None]:
        # OperationalError covers "database is locked", "attempt to write a readonly database", "unable to open",
        # "disk I/O error" and "database or disk is full": the store cannot be used right now.
        return translated(operation, (sqlite3.OperationalError, OSError), (sqlite3.Error,))

    def _check_file(self) -> None:
        """Refuse to go on if the path no longer names the file this process opened (deleted or replaced)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            current = None
        else:
            current = (stat.st_dev, stat.st_ino)
        if current != self._identity:
            raise StoreUnavailable(f"the SQLite file {str(self.path)!r} was deleted or replaced while in use; its "
                                   "records (idempotency claims, counters) may be lost", operation="check")

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (opened on first use, and again after a fork). Call with the lock held."""
        if self._closed:
            raise sqlite3.ProgrammingError("SQLiteStore is closed")
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # isolation_level=None: no implicit transactions, every one is the explicit BEGIN IMMEDIATE below.
        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        if self._identity is None:
            stat = os.stat(self.path)
            self._identity = (stat.st_dev, stat.st_ino)
        else:
            self._check_file()
        conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect on a new, empty file
        conn.execute("PRAGMA synchronous = NORMAL")
        self._set_wal(conn)
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL; the switch can report "locked" without waiting, so retry within the timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    @staticmethod
    def _transaction(conn: sqlite3.Connection, body: Callable[[], _T]) -> _T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body()
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _write(self, operation: str, body: Callable[[sqlite3.Connection, float], _T]) -> _T:
        """Run ``body(conn, now)`` as one ``BEGIN IMMEDIATE`` transaction; sweep expired rows now and then."""
        with self._lock, self._translated(operation):
            conn = self._connection()
            self._check_file()

            def run() -> _T:
                now = time.time()
                self._writes += 1
                if self._writes % _SWEEP_EVERY == 0:
                    conn.execute(f"DELETE FROM {_TABLE} WHERE expires_at <= ?", (now,))
                return body(conn, now)

            result = self._transaction(conn, run)
            if self._writes % _SWEEP_EVERY == 0:
                conn.executescript("PRAGMA incremental_vacuum;")  # runs to completion (execute() steps once)
            return result

    def sweep(self) -> int:
        """Delete every expired row now and return freed pages to the file system; how many rows were deleted."""
        def body(conn: sqlite3.Connection, now: float) -> int:
            return conn.execute(f"DELETE FROM {_TABLE} WHERE expires_at <= ?", (now,)).rowcount

        deleted = self._write("sweep", body)
        with self._lock, self._translated("sweep"):
            self._connection().executescript("PRAGMA incremental_vacuum;")
        return deleted

    @staticmethod
    def _live(conn: sqlite3.Connection, key: str, now: float) -> tuple[str, float] | None:
        row = conn.execute(f"SELECT value, expires_at FROM {_TABLE} WHERE key = ?", (key,)).fetchone()
        if row is None or row[1] <= now:
            return None
        return str(row[0]), float(row[1])

    def get(self, key: str) -> str | None:
        check_key(key)
        with self._lock, self._translated("get"):
            conn = self._connection()
            self._check_file()
            # One SELECT is its own (read) transaction: it sees one committed state.
            found = self._live(conn, key, time.time())
        return None if found is None else found[0]

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)

        def body(conn: sqlite3.Connection, now: float) -> bool:
            if self._live(conn, key, now) is not None:
                return False
            conn.execute(f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?)", (key, value, now + ttl))
            return True

        return self._write("put_if_absent", body)

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)

        def body(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                f"UPDATE {_TABLE} SET value = ?, expires_at = ? WHERE key = ? AND value = ? AND expires_at > ?",
                (value, now + ttl, key, expected, now),
            )
            return cursor.rowcount == 1

        return self._write("compare_and_set", body)

    def delete_if(self, key: str, expected: str) -> bool:
        check_key(key)

        def body(conn: sqlite3.Connection, now: float) -> bool:
            cursor = conn.execute(
                f"DELETE FROM {_TABLE} WHERE key = ? AND value = ? AND expires_at > ?", (key, expected, now)
            )
            return cursor.rowcount == 1

        return self._write("delete_if", body)

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        check_key(key)
        check_ttl(window, "window")
        check_counter(amount, limit)

        def body(conn: sqlite3.Connection, now: float) -> tuple[bool, float]:
            found = self._live(conn, key, now)
            current = 0.0 if found is None else parse_number(key, found[0])
            total = current + amount
            if total > limit:
                return False, current
            if amount > 0:
                expires_at = now + window if found is None else found[1]
                conn.execute(
                    f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?)", (key, format_number(total), expires_at)
                )
            return True, total

        return self._write("add_within_limit", body)

    def add_within_limits(self, counters: Sequence[Counter]) -> int | None:
        check_counters(counters)

        def body(conn: sqlite3.Connection, now: float) -> int | None:
            updates = []
            for index, counter in enumerate(counters):
                found = self._live(conn, counter.key, now)
                current = Decimal(0) if found is None else parse_decimal(counter.key, found[0])
                total = add_exact(current, counter.amount)
                if total > counter.limit:
                    return index
                expires_at = now + counter.window if found is None else found[1]
                if counter.amount > 0:
                    updates.append((counter.key, str(total), expires_at))
            conn.executemany(f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?)", updates)
            return None

        return self._write("add_within_limits", body)

    def close(self) -> None:
        """Close this process's connection; later operations raise ``sqlite3.ProgrammingError``."""
        with self._lock:
            self._closed = True
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
