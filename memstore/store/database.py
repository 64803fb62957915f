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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from memstore.analysis.quoting import sql_ident
from memstore.errors import QueryError, ReadOnlyError, StoreLockedError, StoreMismatchError, StoreWriteError
from memstore.store.extensions import load_extension
from memstore.store.scope_cache import ScopeCache, cache_for, release_cache
from memstore.store.sqlfiles import load_sql, migration_files

log = logging.getLogger("memstore.store")


class InjectedFault(RuntimeError):
    """Raised at a named fault point (tests use it to prove rollbacks)."""


class Database:
    """A DuckDB file with memstore's schema, thread-local cursors and one write lock."""

    def __init__(self, path: str | os.PathLike, *, dim: int, embedder: str, read_only: bool = False) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.read_only = read_only
        self._con = _connect(self.path, read_only)
        self._local = threading.local()
        self.write_lock = threading.RLock()
        self.faults: set[str] = set()          # names of fault points that raise (tests only)
        self.trace: Callable[[str, str, Any, float], None] | None = None
        self.scope_cache: ScopeCache = cache_for(self.path)
        # freed when the last Database on this file closes, or is garbage-collected unclosed
        self._release = weakref.finalize(self, release_cache, self.path, self.scope_cache)
        self._columns: dict[str, dict[str, str]] = {}
        self._insert_shapes: dict[tuple, tuple[bool, str, str]] = {}
        self.has_vss = load_extension(self._con, "vss")
        self.has_fts = load_extension(self._con, "fts")
        if not read_only:
            self._migrate(dim)
        self.dim = self._check_meta(dim, embedder)

    # -- connection -----------------------------------------------------------------------------
    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """A cursor for the calling thread (DuckDB connections are not shared across threads)."""
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._con.cursor()
            self._local.cur = cur
        return cur

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._con.close()
        self._release()      # runs once

    def reopen(self) -> None:
        """Close and connect again to the same path (erasure replaces the file with a rewritten
        copy). Every thread gets a fresh cursor on its next statement. Keep in step with __init__'s
        per-connection setup."""
        with self.write_lock:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = _connect(self.path, self.read_only)
            self._local = threading.local()
            self.has_vss = load_extension(self._con, "vss")
            self.has_fts = load_extension(self._con, "fts")
            self.scope_cache.invalidate()
            self._columns.clear()
            self._insert_shapes.clear()

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
        stored_dim = int(meta["dim"])
        if stored_dim != dim:
            raise StoreMismatchError(
                f"store {self.path} holds {stored_dim}-d embeddings from {meta.get('embedder')!r}; "
                f"the configured embedder {embedder!r} gives {dim}-d",
                hint="open it with the embedder it was built with, or export and re-import with the new one")
        if meta.get("embedder") not in (None, embedder):
            import warnings

            warnings.warn(f"store {self.path} was embedded with {meta.get('embedder')!r}, the configured embedder is "
                          f"{embedder!r}: similarities between old and new vectors are meaningless",
                          RuntimeWarning, stacklevel=3)
        return stored_dim

    def meta(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM store_meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    # -- statements -----------------------------------------------------------------------------
    def run(self, name: str, params: Any = None, *, sql: str | None = None) -> duckdb.DuckDBPyConnection:
        """Execute the named SQL file (or `sql`) with parameters; errors carry name, SQL and params."""
        text = sql if sql is not None else load_sql(name)
        start = time.perf_counter()
        try:
            cur = self.con.execute(text, params) if params is not None else self.con.execute(text)
        except duckdb.Error as exc:
            raise QueryError(name, text, params, exc) from exc
        if self.trace is not None:
            self.trace(name, text, params, time.perf_counter() - start)
        if not self.in_transaction and not _is_read(name, text):
            self.scope_cache.invalidate()     # an autocommitted write the caches did not see
        return cur

    def rows(self, name: str, params: Any = None, *, sql: str | None = None) -> list[tuple]:
        return self.run(name, params, sql=sql).fetchall()

    def dicts(self, name: str, params: Any = None, *, sql: str | None = None) -> list[dict[str, Any]]:
        cur = self.run(name, params, sql=sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.run("scalar", params, sql=sql).fetchone()
        return row[0] if row else None

    def arrow(self, name: str, params: Any = None, *, sql: str | None = None) -> pa.Table:
        return self.run(name, params, sql=sql).to_arrow_table()

    def frame(self, name: str, params: Any = None, *, sql: str | None = None) -> pl.DataFrame:
        return pl.from_arrow(self.arrow(name, params, sql=sql))  # type: ignore[return-value]

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        """Append an Arrow table (columns named as the target's) — vectors cross as Arrow, not lists."""
        if data.num_rows == 0:
            return
        self.checkpoint(f"write:{table}")
        view = f"_ins_{table}_{threading.get_ident()}"
        con = self.con
        con.register(view, data)
        try:
            cols = ", ".join(f'"{c}"' for c in data.column_names)
            sql = f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM "{view}"'
            try:
                con.execute(sql)
            except duckdb.Error as exc:
                raise QueryError(f"write:{table}", sql, None, exc) from exc
        finally:
            con.unregister(view)
            if not self.in_transaction:
                self.scope_cache.invalidate()

    def insert_rows(self, table: str, data: pa.Table) -> None:
        """Append a few rows in ONE parameterised statement (~0.5 ms, where registering an Arrow
        table costs ~1.4 ms): columns travel as typed list parameters, vectors as NumPy arrays.
        For bulk loads use `insert_arrow`."""
        if data.num_rows == 0:
            return
        self.checkpoint(f"write:{table}")
        types = self.column_types(table)
        cols = data.column_names
        shape = self._insert_shapes.get((table, tuple(cols)))
        if shape is None:       # quoting every name costs more than the statement: once per table and columns
            names = ", ".join(sql_ident(c) for c in cols)
            vector = any(types[c].endswith("]") and not types[c].endswith("[]") for c in cols)   # a FLOAT[dim]
            if vector:
                shape = (True, f"INSERT INTO {sql_ident(table)} ({names}) VALUES ",
                         "(" + ", ".join(f"?::{types[c]}" for c in cols) + ")")
            else:
                shape = (False, f"INSERT INTO {sql_ident(table)} ({names}) SELECT "
                         + ", ".join(f"unnest(?::{types[c]}[])" for c in cols), "")
            self._insert_shapes[(table, tuple(cols))] = shape
        vector, head, row = shape
        if vector:
            sql = head + ", ".join([row] * data.num_rows)
            columns = [_param_column(data.column(c), types[c]) for c in cols]
            params = [col[i] for i in range(data.num_rows) for col in columns]
        else:
            sql = head
            params = [data.column(c).to_pylist() for c in cols]
        try:
            self.con.execute(sql, params)
        except duckdb.Error as exc:
            raise QueryError(f"write:{table}", sql, None, exc) from exc
        if not self.in_transaction:
            self.scope_cache.invalidate()

    def upsert_entities(self, ents: pa.Table) -> None:
        """Add the entities not stored yet (shared by all scopes) in ONE statement."""
        if ents.num_rows == 0:
            return
        self.checkpoint("write:entities")
        self.run("queries/insert_entities", {
            "ids": ents.column("id").to_pylist(), "names": ents.column("name").to_pylist(),
            "norms": ents.column("norm").to_pylist(), "labels": ents.column("label").to_pylist(),
            "created_at": ents.column("created_at")[0].as_py()})

    def prune_messages(self, scope_key: str, ids: list[str]) -> None:
        """Delete these messages of the scope (add()'s pruning beyond `messages_kept`)."""
        if ids:
            self.run("queries/prune_messages_by_id", {"scope_key": scope_key, "ids": list(ids)})

    def column_types(self, table: str) -> dict[str, str]:
        """{column: DuckDB type} of a table (cached; the schema only changes by migration)."""
        types = self._columns.get(table)
        if types is None:
            rows = self._con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                     "WHERE table_name = ? AND table_schema = 'main'", [table]).fetchall()
            types = self._columns[table] = dict(rows)
        return types

    # -- transactions ---------------------------------------------------------------------------
    def checkpoint(self, point: str) -> None:
        """A named fault point: raises InjectedFault when a test asked for it."""
        if point in self.faults:
            raise InjectedFault(f"injected fault at {point}")

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
                yield con
                return
            con.execute("BEGIN TRANSACTION")
            self._local.in_transaction = True
            self._local.cache_follows = cache_follows
            try:
                yield con
                self.checkpoint("commit")
                if cache_follows:
                    with self.scope_cache.lock:     # no reader sees the new files before the fingerprint
                        con.execute("COMMIT")
                        self.scope_cache.after_commit(self)
                else:
                    con.execute("COMMIT")
                if not (keeps_cache or cache_follows):
                    self.scope_cache.invalidate()
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                self.scope_cache.invalidate()
                if isinstance(exc, StoreWriteError):
                    raise
                failed = exc.name if isinstance(exc, QueryError) else step
                if isinstance(exc, InjectedFault):
                    failed = str(exc).removeprefix("injected fault at ")
                raise StoreWriteError(failed, exc) from exc
            finally:
                self._local.in_transaction = False
                self._local.cache_follows = False


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, with a lock held by another process turned into one clear sentence."""
    try:
        return duckdb.connect(path, read_only=read_only)
    except duckdb.IOException as exc:
        from memstore.server.discovery import lock_holder

        holder = lock_holder(exc)
        if holder is None:
            raise
        raise StoreLockedError(
            f"store {path} is held by another process ({holder}), which is not a memstore server",
            hint=f"close it there, or run `memstore serve --store {path}` and connect everything to it "
                 f"(Memory(path), the CLI and the dashboard then become its clients)",
            path=path, holder=holder) from None


_READ_WORDS = ("SELECT", "WITH", "DESCRIBE", "SHOW", "EXPLAIN", "PRAGMA", "SET", "FROM", "SUMMARIZE", "VALUES")
_READ_CACHE: dict[str, bool] = {}


def _is_read(name: str, text: str) -> bool:
    """Does this statement only read? (first keyword after comments; cached per named file)"""
    known = _READ_CACHE.get(name)
    if known is not None:
        return known
    lines = (ln.strip() for ln in text.splitlines())
    first = next((ln for ln in lines if ln and not ln.startswith("--")), "")
    read = first.split(None, 1)[0].upper().lstrip("(") in _READ_WORDS if first else True
    if name.startswith("queries/") or name.startswith("views/"):
        _READ_CACHE[name] = read
    return read


def _param_column(col: pa.ChunkedArray, sql_type: str) -> list:
    """One column as Python parameters; vectors as NumPy arrays (binds far faster than lists)."""
    if pa.types.is_fixed_size_list(col.type) or pa.types.is_list(col.type) and sql_type.endswith("]") \
            and not sql_type.endswith("[]"):
        arr = col.combine_chunks()
        width = arr.type.list_size if pa.types.is_fixed_size_list(arr.type) else None
        if width is not None and arr.null_count == 0:
            flat = arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
            return list(flat)
    return col.to_pylist()


def vectors_table(vectors, dim: int, **columns) -> pa.Table:  # noqa: ANN001
    """Arrow table with an `embedding` FLOAT[dim] column (plus extra columns) from a 2-D array."""
    import numpy as np

    arr = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1, dim))
    emb = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1), type=pa.float32()), dim)
    data = {k: v for k, v in columns.items()}
    data["embedding"] = emb
    return pa.table(data)


@contextlib.contextmanager
def registered(db: Database, name: str, table: pa.Table) -> Iterator[None]:
    """Make an Arrow table visible to SQL as `name` on this thread's cursor."""
    con = db.con
    con.register(name, table)
    try:
        yield
    finally:
        con.unregister(name)
