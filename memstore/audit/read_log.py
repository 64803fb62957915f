"""The read log: rows of the audit of reads, held in memory and appended to the store off the
read's path.

A read calls `ReadLog.search(...)` (or `records` / `frame`) after its result is ready: a random
draw (`audit.sample`), one tuple built (read_rows.py), one append to a bounded buffer. Nothing
there touches the store, and nothing there raises: a failure to build a row is counted
(`stats["failed"]`), a full buffer counts the reads it could not hold (`stats["dropped"]`).
The rows reach the `reads` table in batches, in one short write unit each (`record_reads`, which
changes no scope: the scope cache and search snapshots stay valid): by this log's own thread every
`audit.flush_s` seconds (sooner when the buffer is half full), or, in a server, by the group
committer's thread after a group once a write is `due()` (`hand_over()`,
memstore/server/group_commit.py). A search that arrives during such a write's COMMIT waits for it
(it holds the scope cache's lock): writes are kept rare for that. A batch that fails to write is tried again
twice, then counted as lost. `flush()` writes what is held now (frames and forget call it first,
so an analyst sees every read made before, and an erasure finds them).

>>> import tempfile, os
>>> from memstore.core.config import AuditConfig
>>> from memstore.store.database import Database
>>> db = Database(os.path.join(tempfile.mkdtemp(), "r.duckdb"), dim=4, embedder="t")
>>> log = ReadLog(db, AuditConfig(reads="on"))
>>> log.search("tea?", {"user_id": "ana"}, ("semantic",), {"results": [{"id": "m1", "score": 0.5}]}, 0.0)
>>> log.flush(), db.rows("q", sql="SELECT user_id, query, result_ids FROM reads")
(1, [('ana', 'tea?', ['m1'])])
>>> log.close(); db.close()
"""
from __future__ import annotations

import collections
import logging
import random
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.audit.read_rows import COLUMNS, Row, frame_row, records_row, search_row
from memstore.core.ids import new_id
from memstore.core.read_context import current
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.core.config import AuditConfig
    from memstore.store.database import Database

log = logging.getLogger(__name__)

_TRIES = 3                      # a batch that fails this many times is counted as lost
EXPIRE_EVERY_S = 3600.0         # old reads are removed at most this often while the log runs
_SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.timestamp("us")), ("token_name", pa.string()), ("door", pa.string()),
                     ("method", pa.string()), ("user_id", pa.string()), ("agent_id", pa.string()),
                     ("run_id", pa.string()), ("query", pa.string()), ("query_hashed", pa.bool_()),
                     ("result_ids", pa.list_(pa.string())), ("scores", pa.list_(pa.float64())),
                     ("channels", pa.list_(pa.string())), ("n_results", pa.int32()), ("ms", pa.float64())])


class ReadLog:
    """The audit of one open store's reads (see the module docstring)."""

    def __init__(self, db: Database, config: AuditConfig, *, thread: bool = True) -> None:
        self.db = db
        self.config = config
        self.hashed = config.reads_query == "hash"
        self.stats: collections.Counter = collections.Counter()
        self._rng = random.Random(config.seed)
        self._rows: collections.deque[Row] = collections.deque()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._tries = 0
        self._last_flush = time.monotonic()
        self._last_expiry = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if thread:
            self._thread = threading.Thread(target=_run, args=(weakref.ref(self), self._stop, config.flush_s),
                                            name="memstore-read-log", daemon=True)
            self._thread.start()

    # -- on the read's path ------------------------------------------------------------------------
    def _reader(self) -> tuple[str | None, str] | None:
        """(token, door) of a read to record now, or None (quiet, or not drawn by the sample)."""
        r = current()
        if r.quiet:
            return None
        sample = self.config.sample
        if sample < 1.0 and self._rng.random() >= sample:
            self.stats["sampled_out"] += 1
            return None
        return r.token, r.door

    def take(self) -> bool:
        """Would a read now be recorded (the sample's draw)? For a door that records rows itself
        (a front's search from its snapshot copy: `append`)."""
        return self._reader() is not None

    def append(self, rows: list[Row]) -> None:
        """Hold these rows for the next write; what the buffer cannot hold is counted as dropped."""
        with self._lock:
            room = self.config.buffer_rows - len(self._rows)
            if room < len(rows):
                self.stats["dropped"] += len(rows) - max(room, 0)
                rows = rows[:max(room, 0)]
            self._rows.extend(rows)
            self.stats["recorded"] += len(rows)

    def _add(self, build: Any, *args: Any, **kwargs: Any) -> None:
        try:
            reader = self._reader()
            if reader is not None:
                self.append([build(*args, reader=reader, hashed=self.hashed, **kwargs)])
        except Exception as exc:
            self.stats["failed"] += 1
            if self.stats["failed"] == 1:
                log.warning("could not record a read: %s: %s", type(exc).__name__, exc)

    def search(self, query: str, filters: Any, channels: Any, result: Any, t0: float, *, method: str = "search") -> None:
        """A search (or the analysts' `search_all`) returned `result` (its `results`: ids and scores)."""
        self._add(search_row, query, filters, channels, result, ms=(time.perf_counter() - t0) * 1e3, method=method)

    def records(self, method: str, filters: Any, records: list[dict[str, Any]], t0: float) -> None:
        """get / get_all returned these memory records."""
        self._add(records_row, method, filters, records, ms=(time.perf_counter() - t0) * 1e3)

    def frame(self, method: str, query: Any, scope: dict[str, Any] | None, frame: Any, t0: float) -> None:
        """An analyst read (explain_search, frame, sql) returned this frame."""
        self._add(frame_row, method, query, scope, frame, ms=(time.perf_counter() - t0) * 1e3)

    # -- off the read's path -----------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return len(self._rows)

    def due(self) -> bool:
        """Is a write due: rows waited `flush_s`, or the buffer is half full?"""
        n = len(self._rows)
        return n > 0 and (time.monotonic() - self._last_flush >= self.config.flush_s
                          or n >= self.config.buffer_rows // 2)

    def flush(self) -> int:
        """Write the rows held now in one write unit; returns how many were written."""
        with self._flush_lock:
            self._last_flush = time.monotonic()
            with self._lock:
                rows = list(self._rows)
                self._rows.clear()
            if rows:
                try:
                    table = pa.Table.from_pylist([{"id": new_id(), **dict(zip(COLUMNS, r))} for r in rows], schema=_SCHEMA)
                    # cache_follows: the COMMIT and the new fingerprint of the files are one step
                    # under the scope cache's lock, so a search meanwhile never takes our write for
                    # someone else's (which drops every copy); no scope's memories changed
                    with write_unit(self.db, "record_reads", cache_follows=True) as db:
                        db.scopes_changed(())
                        db.insert_arrow("reads", table)
                except Exception as exc:
                    self._tries += 1
                    if self._tries >= _TRIES:
                        self.stats["lost"] += len(rows)
                        self._tries = 0
                        log.warning("lost %d reads of the audit: %s: %s", len(rows), type(exc).__name__, exc)
                    else:
                        with self._lock:
                            self._rows.extendleft(reversed(rows))
                    self.stats["flush_errors"] += 1
                    return 0
                self._tries = 0
                self.stats["written"] += len(rows)
                self.stats["batches"] += 1
            if self.expiry_due():
                self._expire()
            return len(rows)

    def expiry_due(self) -> bool:
        """Are old reads to be removed (audit.retain_days set, an hour since the last time)?"""
        return self.config.retain_days is not None and time.monotonic() - self._last_expiry >= EXPIRE_EVERY_S

    def _expire(self) -> None:
        from memstore.audit.read_retention import expire_reads

        self._last_expiry = time.monotonic()
        try:
            self.stats["expired"] += expire_reads(self.db, default_days=self.config.retain_days)
        except Exception as exc:
            log.warning("could not remove old reads: %s: %s", type(exc).__name__, exc)

    def drop_scope(self, scope: dict[str, str]) -> int:
        """Forget the rows held in memory of reads in `scope` (an erasure of it is under way)."""
        idx = {"user_id": 4, "agent_id": 5, "run_id": 6}
        want = [(idx[k], v) for k, v in scope.items() if v is not None and k in idx]
        with self._lock:
            keep = [r for r in self._rows if not all(r[i] == v for i, v in want)]
            n = len(self._rows) - len(keep)
            self._rows.clear()
            self._rows.extend(keep)
        return n

    def hand_over(self) -> None:
        """Stop this log's own thread: a server's group committer calls `flush()` from now on."""
        self._stop.set()

    def close(self) -> None:
        """Stop the thread and write what is held."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.flush()


def _run(ref: weakref.ref, stop: threading.Event, every: float) -> None:
    """The log's thread: flush every `every` seconds until stopped or the log is gone."""
    while not stop.wait(min(every, 0.5)):
        rl = ref()
        if rl is None:
            return
        if rl.due() or rl.expiry_due():
            rl.flush()
        del rl
