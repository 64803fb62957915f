"""One DuckDB database per store. Every statement runs through `Database.run`, which names it,
times it and attaches SQL and parameters to the error it raises.

>>> db = Database(":memory:", dim=4, embedder="test")
>>> db.scalar("SELECT count(*) FROM memories")
0
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from memstore.core.errors import (
    MemstoreError,
    PipelineStepError,
    QueryError,
    ReadOnlyError,
    StoreBusyError,
    StoreInvalidatedError,
    StoreWriteError,
)
from memstore.store.extensions import extension_file
from memstore.store.open_errors import check_store_meta, explain_fatal_error
from memstore.store.open_files import closed, explain_connect_error, open_count, opened
from memstore.store.quoting import sql_ident, sql_string
from memstore.store.reopen_gate import ReopenGate, busy, stale
from memstore.store.scope_cache import ScopeCache
from memstore.store.scratch import Scratch
from memstore.store.sqlfiles import load_sql, migration_files
from memstore.store.write_lock import WriteLock
from memstore.store.write_values import ARROW_FLOATS as _ARROW_FLOATS  # tests lower it
from memstore.store.write_values import insert_shape, param_column, vector_array

log = logging.getLogger("memstore.store")

# Rows per Arrow batch when a result crosses to Arrow (DuckDB's vector size). DuckDB's default
# (1,000,000) sizes its buffers for that many rows: a cold search of 1,000 memories on a 1M store
# cost ~4 ms more CPU (interleaved A/B, 600 searches), and the large short-lived buffers fragmented
# the heap: 120 scopes searched twice left RSS at 1,856 MiB against 1,088 MiB with 2,048
# (issue 35). Longer results come back in several chunks.
ARROW_BATCH_ROWS = 2048


class InjectedFault(MemstoreError, RuntimeError):
    """Raised at a named fault point (tests use it to prove rollbacks)."""


class Database:
    """A DuckDB file with memstore's schema, thread-local cursors and one write lock."""

    def __init__(self, path: str | os.PathLike[str], *, dim: int, embedder: str, read_only: bool = False,
                 scope_cache: ScopeCache | None = None, threads: int | None = None,
                 memory_limit: str | None = None) -> None:
        """`threads`: DuckDB worker threads (None: DuckDB's default). It is a setting of the open
        file in this process, so the last Database opened on the file decides; so is
        `memory_limit` (DuckDB's buffer pool, e.g. "1GB"; sorts and joins beyond it spill to disk)."""
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.read_only = read_only
        self._file_guard: int | None = None     # see file_fd()
        self._invalidated: str | None = None    # a fatal write error's text: reopen on the next call
        self._con = _connect(self.path, read_only)
        self._local = threading.local()
        self.write_lock = WriteLock()           # writers first: maintenance lets waiting writers in
        self.gate = ReopenGate()              # reads (which skip the write lock) never meet a reopen
        # explicit transactions open now, by thread: {thread id: (step, since)} (a busy CHECKPOINT names them)
        self.open_transactions: dict[int, tuple[str, float]] = {}
        self.faults: set[str] = set()          # names of fault points that raise (tests only)
        self.trace: Callable[[str, str, Any, float], None] | None = None
        # the owner's (a Memory's Runtime) copy of the scopes; told of every change it cannot follow
        self.scope_cache: ScopeCache = scope_cache if scope_cache is not None else ScopeCache()
        # how many Database objects of this process have the file open (the file guard, rewrites)
        self._release = weakref.finalize(self, closed, self.path)
        opened(self.path)
        self._columns: dict[str, dict[str, str]] = {}
        self._insert_shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._threads = threads
        self._memory_limit = memory_limit
        # called after every committed transaction (the store's maintenance: memstore/store/recluster.py)
        self.commit_listeners: list[Callable[[Database], Any]] = []
        self.maintenance: Any = None
        self._set_threads()
        self._load_extensions()
        if not read_only:
            self._migrate(dim)
        self.dim = self._check_meta(dim, embedder)

    # -- connection -----------------------------------------------------------------------------
    def set_threads(self, threads: int) -> None:
        """DuckDB worker threads for this file in this process from now on (kept across a reopen).

        >>> db = Database(":memory:", dim=4, embedder="test")
        >>> db.set_threads(1); db.scalar("SELECT current_setting('threads')")
        1
        """
        self._threads = int(threads)
        self._set_threads()

    def _set_threads(self) -> None:
        if self._threads is not None:
            self._con.execute(f"SET threads = {int(self._threads)}")     # an int, never user text
        if self._memory_limit is not None:      # checked by config (digits and a unit), never user SQL
            self._con.execute(f"SET memory_limit = '{self._memory_limit}'")
    # -- extensions: VSS only where an HNSW index exists or is asked for (LOAD costs ~65 % of an open)
    @property
    def has_vss(self) -> bool:
        """Is DuckDB's VSS extension installed (loadable)? `ensure_vss()` loads it."""
        return extension_file("vss") is not None

    @property
    def vss_loaded(self) -> bool:
        """Is VSS loaded on this connection (the store has an HNSW index, or one was asked for)?"""
        return getattr(self, "_vss_loaded", False)

    def ensure_vss(self) -> bool:
        """Load VSS on this connection if it is not yet; True when loaded."""
        if not self.vss_loaded:
            path = extension_file("vss")
            if path is not None:
                self.run_instance("load:vss", f"LOAD {sql_string(str(path))}")
            self._vss_loaded = path is not None
        return self._vss_loaded

    def _load_extensions(self) -> None:
        self._vss_loaded = False
        # fetchall: a result left unread keeps the connection's transaction open (a CHECKPOINT
        # elsewhere then meets "other write transactions active")
        rows = [] if self.path == ":memory:" else self._con.execute(
            "SELECT count(*) FROM duckdb_indexes() WHERE sql ILIKE '%USING HNSW%'").fetchall()
        if rows and rows[0][0]:
            self.ensure_vss()

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """A cursor for the calling thread (DuckDB connections are not shared across threads)."""
        if getattr(self, "_invalidated", None) is not None:
            self._recover()
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._con.cursor()
            self._local.cur = cur
            if not hasattr(self, "_cursors"):
                self._cursors = {}
            self._cursors[threading.get_ident()] = cur   # closed by reopen (bounded by live threads)
        return cur

    def close(self) -> None:
        if self.maintenance is not None:        # a running re-cluster stops after its slice
            self.maintenance.stop()
        with contextlib.suppress(Exception):
            self._con.close()
        self._drop_file_guard(closing=True)
        self._release()      # runs once
        self.scope_cache.invalidate()      # frees the copies (and any snapshot built on them)

    @property
    def others_open(self) -> bool:
        """Does another Database object of this process have the same file open?"""
        return open_count(self.path) > 1

    @property
    def raw_connection(self) -> duckdb.DuckDBPyConnection:
        """The connection itself (not a thread's cursor): for instance-wide work like ATTACH."""
        return self._con

    def file_fd(self) -> int | None:
        """A descriptor on the store file, kept open while this Database lives. Read the file
        through it (os.pread), never by opening it again: closing any descriptor of the file drops
        the process's POSIX lock on it, the lock DuckDB relies on to keep other processes out."""
        fd = getattr(self, "_file_guard", None)
        if fd is None and self.path != ":memory:" and os.path.exists(self.path):
            fd = self._file_guard = os.open(self.path, os.O_RDONLY)
        return fd

    def _drop_file_guard(self, *, closing: bool = False) -> None:
        fd = getattr(self, "_file_guard", None)
        if fd is None:
            return
        if closing and self.others_open:
            return     # another Database of this process has the file open: closing fd would unlock it
        self._file_guard = None
        with contextlib.suppress(OSError):
            os.close(fd)

    def reopen(self, *, before_connect: Callable[[], None] | None = None, file_guard: int | None = None) -> None:
        """Close and connect again to the same path (erasure replaces the file with a rewritten
        copy). Every thread gets a fresh cursor on its next statement. Keep in step with __init__'s
        per-connection setup. `before_connect` runs between close and connect; `file_guard` is a
        descriptor (locked) on the new file, kept as this Database's file_fd()."""
        with self.write_lock:
            with self.gate.reopening():       # statements of other threads finish first, new ones wait
                with contextlib.suppress(Exception):
                    self._con.close()
                for cur in list(getattr(self, "_cursors", {}).values()):
                    with contextlib.suppress(Exception):
                        cur.close()
                self._cursors = {}
                if file_guard is not None:
                    self._drop_file_guard()
                    self._file_guard = file_guard
                if before_connect is not None:
                    before_connect()
                self._con = _connect(self.path, self.read_only)
                self._local = threading.local()
                self._set_threads()
                self._load_extensions()
                self._columns.clear()
                self._insert_shapes.clear()
            self.scope_cache.invalidate()     # after the gate: a reader holding the cache's lock may wait in it

    # -- a fatal write error (disk full) invalidates DuckDB's database: reopen on the next call --
    def _raise_if_fatal(self, exc: BaseException) -> None:
        """Raise what `explain_fatal_error` says of a disk-full or invalidating error; else return."""
        err, invalidated = explain_fatal_error(self.path, exc)
        if err is None:
            return
        if invalidated:
            self._invalidated = str(exc)
        raise err from exc

    def _recover(self) -> None:
        with self.write_lock:
            if getattr(self, "_invalidated", None) is None:
                return
            try:
                self.reopen()
            except duckdb.Error as exc:
                self._raise_if_fatal(exc)
                raise StoreInvalidatedError(f"store {self.path} could not be reopened: {exc}",
                                            hint="fix the cause (disk, permissions), then call again") from exc
            self._invalidated = None
            log.warning("store %s reopened after DuckDB invalidated it", self.path)

    @property
    def files_checked(self) -> bool:
        """Inside a transaction whose BEGIN found the store files as the scope cache last recorded
        them (no write it did not see): the scope cache need not look at the files again."""
        return self.in_transaction and getattr(self._local, "undeclared", True) is False

    @property
    def in_transaction(self) -> bool:
        """True inside `transaction()` on this thread."""
        return getattr(self._local, "in_transaction", False)

    @property
    def cache_follows(self) -> bool:
        """True when the writes on this thread keep the scope cache current themselves: a single
        add() (no outer transaction) or a group commit of adds (`transaction(cache_follows=True)`);
        False inside other transactions (ingest, update, erase ...), whose COMMIT drops the cache."""
        return not self.in_transaction or getattr(self._local, "cache_follows", False)

    def invalidate_caches(self) -> None:
        """Forget the in-process copies of the store (call after writing through `con` directly;
        memstore's own writes do this themselves)."""
        self.scope_cache.invalidate()

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self, dim: int) -> None:
        con = self._con
        con.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
        done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, path in migration_files():
            if version in done:
                continue
            sql = path.read_text(encoding="utf-8").replace("{dim}", str(int(dim)))
            con.execute("BEGIN")
            try:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
                con.execute("COMMIT")
            except Exception:
                con.execute("ROLLBACK")
                raise
            log.info("applied migration %s", name)

    def _check_meta(self, dim: int, embedder: str) -> int:
        meta = dict(self._con.execute("SELECT key, value FROM store_meta").fetchall())
        if not meta:
            if self.read_only:
                return dim
            self._con.executemany("INSERT INTO store_meta VALUES (?, ?)",
                                  [["dim", str(dim)], ["embedder", embedder]])
            return dim
        return check_store_meta(self.path, meta, dim, embedder)

    def meta(self, key: str) -> str | None:
        with self._fetching("meta"):
            rows = self.run("meta", [key], sql="SELECT value FROM store_meta WHERE key = ?").fetchall()
        return rows[0][0] if rows else None

    # -- statements -----------------------------------------------------------------------------
    def run(self, name: str, params: Any = None, *, sql: str | None = None,
            writes: bool = False) -> duckdb.DuckDBPyConnection:
        """Execute the named SQL file (or `sql`) with parameters; errors carry name, SQL and params.

        A statement that changes rows says so with `writes=True` unless it runs inside
        `transaction()` (whose COMMIT keeps the scope cache right): an autocommitted write drops the
        cache. Reads never touch it.

        >>> db = Database(":memory:", dim=4, embedder="test")
        >>> before = db.scope_cache.stats["invalidations"]
        >>> _ = db.run("doc:read", sql="DELETE FROM memories WHERE false")      # says nothing: no drop
        >>> _ = db.run("doc:write", sql="DELETE FROM memories WHERE false", writes=True)
        >>> db.scope_cache.stats["invalidations"] - before
        1
        """
        text = sql if sql is not None else load_sql(name)
        if writes:      # a named fault point per write statement (tests inject faults here)
            self.checkpoint(f"write:{name.rsplit('/', 1)[-1]}")
        start = time.perf_counter()
        for attempt in range(_CHECKPOINT_TRIES):
            try:
                if writes and not self.in_transaction:      # an autocommitted write: not during a CHECKPOINT
                    with self.write_lock, self.gate.statement(name):
                        cur = self.con.execute(text, params) if params is not None else self.con.execute(text)
                else:
                    with self.guard(name):
                        cur = self.con.execute(text, params) if params is not None else self.con.execute(text)
                break
            except duckdb.Error as exc:
                self._raise_if_fatal(exc)
                if stale(exc):
                    raise busy(name) from exc
                if "Cannot CHECKPOINT" not in str(exc):
                    raise QueryError(name, text, params, exc) from exc
                if attempt == _CHECKPOINT_TRIES - 1:   # a write of another connection still open: say so
                    others = {k: v for k, v in self.open_transactions.items() if k != threading.get_ident()}
                    held = "; ".join(f"{step!r} on thread {tid} for {time.monotonic() - t0:.1f} s"
                                     for tid, (step, t0) in others.items()) or "none of memstore's own"
                    raise StoreBusyError(f"{name}: the store's file could not be checkpointed while another "
                                         f"connection's write was open (open transactions: {held})", step=name,
                                         retry_after=1) from exc
                time.sleep(min(0.05 * (attempt + 1), 0.25))     # wait for that writer to commit
        if self.trace is not None:
            self.trace(name, text, params, time.perf_counter() - start)
        if writes and not self.in_transaction:
            self.scope_cache.invalidate()     # an autocommitted write the caches did not see
        return cur

    def guard(self, step: str = "statement") -> contextlib.AbstractContextManager[Any]:
        """Hold a reopen off while a statement and its fetch run (see store/reopen_gate.py); a
        no-op inside a transaction, whose write lock already keeps reopen out."""
        return contextlib.nullcontext() if self.in_transaction else self.gate.statement(step)

    @contextlib.contextmanager
    def _fetching(self, name: str) -> Iterator[None]:
        """A statement and its fetch, as one: a fetch a reopen broke is a retryable StoreBusyError."""
        with self.guard(name):
            try:
                yield
            except duckdb.Error as exc:
                self._raise_if_fatal(exc)
                if stale(exc):
                    raise busy(name) from exc
                raise QueryError(name, f"(fetching the result of {name})", None, exc) from exc

    def rows(self, name: str, params: Any = None, *, sql: str | None = None, writes: bool = False) -> list[tuple[Any, ...]]:
        if writes and not self.in_transaction:
            with self.write_lock, self._fetching(name):     # the write lock before the gate, as reopen takes them
                return self.run(name, params, sql=sql, writes=writes).fetchall()
        with self._fetching(name):
            return self.run(name, params, sql=sql, writes=writes).fetchall()

    def dicts(self, name: str, params: Any = None, *, sql: str | None = None) -> list[dict[str, Any]]:
        with self._fetching(name):
            cur = self.run(name, params, sql=sql)
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Any = None) -> Any:
        with self._fetching("scalar"):
            rows = self.run("scalar", params, sql=sql).fetchall()     # read to the end: see _load_extensions
        return rows[0][0] if rows else None

    def arrow(self, name: str, params: Any = None, *, sql: str | None = None) -> pa.Table:
        with self._fetching(name):
            return self.run(name, params, sql=sql).to_arrow_table(ARROW_BATCH_ROWS)

    def frame(self, name: str, params: Any = None, *, sql: str | None = None) -> pl.DataFrame:
        return pl.from_arrow(self.arrow(name, params, sql=sql))  # type: ignore[return-value]

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        """Append an Arrow table (columns named as the target's) — vectors cross as Arrow, not lists."""
        if data.num_rows == 0:
            return
        self.checkpoint(f"write:{table}")
        if data.column(0).num_chunks > 1:       # a batch of many small parts (a write unit): DuckDB scans
            data = data.combine_chunks()       # one chunk ~2.5x faster than 50 tiny ones
        con = self.con
        order = list(self.column_types(table))
        start = time.perf_counter()
        try:
            if len(order) == data.num_columns and set(order) == set(data.column_names):
                # every column, in the table's order: a relation inserts it with no catalog object to
                # register and unregister (-0.7 ms a table, python bench/write_path.py --batch 50)
                sql = f"INSERT INTO {sql_ident(table)} FROM arrow relation"
                con.from_arrow(data.select(order)).insert_into(sql_ident(table))
            else:
                view = f"_ins_{table}_{threading.get_ident()}"
                cols = ", ".join(sql_ident(c) for c in data.column_names)
                sql = f"INSERT INTO {sql_ident(table)} ({cols}) SELECT {cols} FROM {sql_ident(view)}"
                con.register(view, data)
                try:
                    con.execute(sql)
                finally:
                    con.unregister(view)
        except duckdb.Error as exc:
            self._raise_if_fatal(exc)
            raise QueryError(f"write:{table}", sql, None, exc) from exc
        finally:
            if not self.in_transaction:
                self.scope_cache.invalidate()
        if self.trace is not None:
            self.trace(f"write:{table}", sql, None, time.perf_counter() - start)

    def insert_rows(self, table: str, data: pa.Table) -> None:
        """Append a few rows of an Arrow table in ONE parameterised statement (see insert_values)."""
        if data.num_rows == 0:
            return
        types = self.column_types(table)
        self.insert_values(table, {c: param_column(data.column(c), types[c]) for c in data.column_names})

    def insert_values(self, table: str, cols: dict[str, list[Any]]) -> None:
        """Append a few rows given as Python columns in ONE parameterised statement (~0.5 ms, where
        registering an Arrow table costs ~1.4 ms): columns travel as typed list parameters. A few
        vectors (FLOAT[dim]) are bound as NumPy parameters, row by row; from `ARROW_FLOATS` floats
        on (a vector binds at ~1.4 us a float: ~0.5 ms for 384-d) they join the list parameters
        positionally from a registered Arrow table instead (a LoCoMo add's 9.4 vectors: the
        memories INSERT 5.4 -> 4.1 ms CPU). For bulk loads use `insert_arrow`."""
        n = len(next(iter(cols.values()))) if cols else 0
        if n == 0:
            return
        self.checkpoint(f"write:{table}")
        types = self.column_types(table)
        names = tuple(cols)
        shape = self._insert_shapes.get((table, names))
        if shape is None:       # quoting every name costs more than the statement: once per table and columns
            shape = insert_shape(table, names, types)
            self._insert_shapes[(table, names)] = shape
        plain, vectors, floats, unnest, values_head, values_row = shape
        con = self.con
        start = time.perf_counter()
        try:
            if not vectors:
                sql = unnest
                con.execute(sql, [cols[c] for c in plain])
            elif n * floats < _ARROW_FLOATS:
                sql = values_head + ", ".join([values_row] * n)
                columns = [[np.asarray(v, np.float32) for v in cols[c]] if c in vectors else cols[c] for c in names]
                con.execute(sql, [col[i] for i in range(n) for col in columns])
            else:
                view = f"_vectors_{threading.get_ident()}"
                sql = unnest.replace("{view}", view)
                con.register(view, pa.table({c: vector_array(cols[c], types[c]) for c in vectors}))
                try:
                    con.execute(sql, [cols[c] for c in plain])
                finally:
                    con.unregister(view)
        except (duckdb.Error, ValueError) as exc:       # ValueError: a vector of the wrong size
            self._raise_if_fatal(exc)
            raise QueryError(f"write:{table}", sql, None, exc) from exc
        if self.trace is not None:
            self.trace(f"write:{table}", sql, None, time.perf_counter() - start)
        if not self.in_transaction:
            self.scope_cache.invalidate()

    def upsert_entities(self, ents: pa.Table) -> None:
        """Add the entities not stored yet (shared by all scopes) in ONE statement."""
        if ents.num_rows == 0:
            return
        self.run("queries/insert_entities", {
            "ids": ents.column("id").to_pylist(), "names": ents.column("name").to_pylist(),
            "norms": ents.column("norm").to_pylist(), "labels": ents.column("label").to_pylist(),
            "created_at": ents.column("created_at")[0].as_py()}, writes=True)

    def prune_messages(self, scope_keys: list[str], ids: list[str]) -> None:
        """Delete these messages of these scopes (add()'s pruning beyond `messages_kept`)."""
        if ids:
            self.run("queries/prune_messages_by_id", {"scope_keys": list(scope_keys), "ids": list(ids)}, writes=True)

    def run_instance(self, name: str, sql: str) -> list[tuple[Any, ...]]:
        """Run an instance-wide statement (SET, ATTACH, COPY FROM DATABASE, DETACH, CHECKPOINT of
        an attached file) on the connection itself rather than this thread's cursor, with the same
        naming, tracing and errors as `run`. Build `sql` with the quoting helpers, never by pasting.

        >>> Database(":memory:", dim=4, embedder="test").run_instance("doc:db", "SELECT current_database()")
        [('memory',)]
        """
        start = time.perf_counter()
        try:
            rows = self._con.execute(sql).fetchall()
        except duckdb.Error as exc:
            self._raise_if_fatal(exc)
            raise QueryError(name, sql, None, exc) from exc
        if self.trace is not None:
            self.trace(name, sql, None, time.perf_counter() - start)
        return rows

    @contextlib.contextmanager
    def snapshot(self, step: str = "snapshot") -> Iterator[None]:
        """One read snapshot for several statements (an export reads every table as of one moment):
        BEGIN … COMMIT on this thread's cursor, ROLLBACK on error. Not for writes: use
        `transaction()`.

        >>> db = Database(":memory:", dim=4, embedder="test")
        >>> with db.snapshot("doc"):
        ...     db.scalar("SELECT count(*) FROM memories")
        0
        """
        with self.guard(step):           # no reopen between BEGIN and COMMIT (it would drop the cursor)
            self.run(f"{step}:begin", sql="BEGIN TRANSACTION")
            self.open_transactions[threading.get_ident()] = (f"snapshot:{step}", time.monotonic())
            try:
                yield
                self.run(f"{step}:commit", sql="COMMIT")
            except BaseException:
                # a failed body or a failed COMMIT: never leave this thread's cursor inside a transaction
                # (an open one makes every later CHECKPOINT of the store fail: StoreBusyError)
                with contextlib.suppress(Exception):
                    self.run(f"{step}:rollback", sql="ROLLBACK")
                raise
            finally:
                self.open_transactions.pop(threading.get_ident(), None)

    def scratch(self, name: str = "scratch", *,
                config: dict[str, str | bool | int | float | list[str]] | None = None) -> Scratch:
        """A private in-memory DuckDB (no store tables) whose statements are traced with this
        store's tracer: erasure filters Parquet exports in one, `m.sql()` runs in a locked one."""
        return Scratch(name, config=config, trace=self.trace)

    def column_types(self, table: str) -> dict[str, str]:
        """{column: DuckDB type} of a table (cached; the schema only changes by migration). Read on
        the calling thread's cursor: on the shared connection two threads asking at once (a served
        store's lake publisher and its writer) could each fetch the other's result and cache it.

        >>> list(Database(":memory:", dim=4, embedder="test").column_types("entity_postings"))[:2]
        ['entity_id', 'memory_id']
        """
        types = self._columns.get(table)
        if types is None:
            with self._fetching("column_types"):
                rows = self.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                        "WHERE table_name = ? AND table_schema = 'main' ORDER BY ordinal_position",
                                        [table]).fetchall()
            types = self._columns.setdefault(table, dict(rows))
        return types

    # -- transactions ---------------------------------------------------------------------------
    def checkpoint(self, point: str) -> None:
        """A named fault point: raises InjectedFault when a test asked for it."""
        if point in self.faults:
            raise InjectedFault(f"injected fault at {point}")

    def scopes_changed(self, scope_keys: Iterable[str]) -> None:
        """Say which scopes' memories this transaction changes (delete, update, purge, resolve):
        its COMMIT then drops only their copies in the scope cache, not every scope's. Work that
        does not say drops everything; so does a declaration inside a joined (nested) transaction,
        whose outer work may change more. The add family (`cache_follows`) keeps the copies and
        says its scopes so that search snapshots of the other scopes stay valid."""
        keys = set(scope_keys)
        if not self.in_transaction:
            self.scope_cache.changed(self, keys)
        elif getattr(self._local, "joined", 0):
            self._local.undeclared = True
        else:
            self._local.changed = (self._local.changed or set()) | keys

    @contextlib.contextmanager
    def transaction(self, step: str = "commit", *, keeps_cache: bool = False,
                    cache_follows: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN … COMMIT under the write lock; any error rolls everything back and raises
        StoreWriteError naming the failed step. A read-only store refuses before BEGIN.

        The in-process scope cache is dropped after the transaction unless `keeps_cache` says the
        caller brings it up to date itself (add() does). `cache_follows` (group commit) says the
        adds inside keep it current one by one: the files' fingerprint is taken after the COMMIT,
        and a ROLLBACK drops the cache (it saw work that is now undone)."""
        if self.read_only:
            raise ReadOnlyError(f"store {self.path} is open read-only: {step} cannot write",
                                hint="open it without read_only=True (config key 'read_only') to change it",
                                step=step)
        with self.write_lock:
            con = self.con
            if getattr(self._local, "in_transaction", False):
                # Nested (e.g. ingest commits several adds at once): join the outer transaction,
                # whose COMMIT or ROLLBACK covers this work too.
                self._local.joined = getattr(self._local, "joined", 0) + 1
                try:
                    yield con
                finally:
                    self._local.joined -= 1
                return
            _begin(con, step)
            self.open_transactions[threading.get_ident()] = (step, time.monotonic())
            self._local.in_transaction = True
            self._local.cache_follows = cache_follows
            self._local.changed = None
            try:
                # a write nobody told the cache about since its last look: no declaration can narrow it
                self._local.undeclared = not self.scope_cache.files_unchanged(self)
                yield con
                self.checkpoint("commit")
                if cache_follows:
                    with self.scope_cache.lock:     # no reader sees the new files before the fingerprint
                        # a write we did not see since BEGIN (another connection's commit): the
                        # copy cannot vouch for the files after ours, so it is dropped
                        unseen = not self.scope_cache.files_unchanged(self)
                        con.execute("COMMIT")
                        if unseen:
                            self.scope_cache.invalidate()
                        else:       # the scopes the adds declared (search snapshots of others stay valid)
                            self.scope_cache.after_commit(
                                self, None if self._local.undeclared else self._local.changed)
                else:
                    con.execute("COMMIT")
                if not (keeps_cache or cache_follows):
                    changed = self._local.changed
                    if changed is None or self._local.undeclared:
                        self.scope_cache.invalidate()       # it did not say what it changed
                    else:
                        self.scope_cache.changed(self, changed)
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                self.scope_cache.invalidate()
                if isinstance(exc, (StoreWriteError, StoreInvalidatedError, PipelineStepError)):
                    raise           # already says what failed (a step's crash names the step)
                if isinstance(exc, duckdb.Error):
                    self._raise_if_fatal(exc)
                failed = exc.name if isinstance(exc, QueryError) else step
                if isinstance(exc, InjectedFault):
                    failed = str(exc).removeprefix("injected fault at ")
                raise StoreWriteError(failed, exc) from exc
            finally:
                self.open_transactions.pop(threading.get_ident(), None)
                self._local.in_transaction = False
                self._local.cache_follows = False
            for listener in self.commit_listeners:
                try:
                    listener(self)
                except Exception as exc:
                    log.warning("commit listener %r failed: %s: %s", listener, type(exc).__name__, exc)


_CHECKPOINT_TRIES = 8      # ~1.3 s at most (under the write lock): a CHECKPOINT waits for another connection's write


def _begin(con: duckdb.DuckDBPyConnection, step: str) -> None:
    """BEGIN on a thread's cursor. A cursor still inside a transaction memstore does not know of
    (it would hold writes open and make every CHECKPOINT, so every forget, answer busy) is rolled
    back first, with a warning naming the step that found it."""
    try:
        con.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException as exc:
        if "within a transaction" not in str(exc):
            raise
        log.warning("%s: this thread's cursor was inside a transaction nobody ended; rolled back", step)
        con.execute("ROLLBACK")
        con.execute("BEGIN TRANSACTION")


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, with a lock held by another process (or another known cause) turned into one
    clear sentence (memstore/store/open_files.py)."""
    try:
        return duckdb.connect(path, read_only=read_only)
    except (duckdb.ConnectionException, duckdb.IOException) as exc:
        raise (explain_connect_error(path, read_only, exc) or exc) from None


@contextlib.contextmanager
def registered(db: Database, name: str, table: pa.Table) -> Iterator[None]:
    """Make an Arrow table visible to SQL as `name` on this thread's cursor (no reopen in between:
    it would drop the registration with the cursor)."""
    with db.guard(f"register:{name}"):
        con = db.con
        con.register(name, table)
        try:
            yield
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister(name)
