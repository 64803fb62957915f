"""Stand-ins that let LangGraph's own store test files run, unchanged, against `MemstoreStore`.

The upstream suites build their store through `SqliteStore.from_conn_string(...)`,
`PostgresStore.from_conn_string(...)` or `InMemoryStore(...)`; `install()` puts modules of those
names in `sys.modules` whose classes hand out a fresh `MemstoreStore` instead (on a new DuckDB
file, or on the store of one `memstore serve` process, reset before each test). Nothing of the test
functions is changed; only how a store is built. Used by bench/outside/langgraph_suites.py.

Mode: $MEMSTORE_LG_TARGET = "embedded" (default) or "serve".
"""
from __future__ import annotations

import atexit
import os
import sys
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memstore.integrations.langgraph import MemstoreStore

CONFIG = {"embedder": {"provider": "hashing"}}
_TMP = tempfile.mkdtemp(prefix="lg-outside-")
_SERVER: Any = None


class ConformanceStore(MemstoreStore):
    """MemstoreStore plus the no-op lifecycle methods the upstream fixtures call."""

    MIGRATIONS: list[str] = []

    def setup(self) -> None:
        """Nothing to migrate: memstore creates its schema on open."""

    def start_ttl_sweeper(self, *_: Any, **__: Any) -> None:
        """Expired items are hidden at read time; no sweeper thread."""

    def stop_ttl_sweeper(self, *_: Any, **__: Any) -> bool:
        return True

    @contextmanager
    def _cursor(self, *_: Any, **__: Any) -> Iterator[_Conn]:
        """The Postgres vector fixture drops its migrations table through this; nothing to drop."""
        yield _Conn()


def _served_store() -> str:
    global _SERVER
    if _SERVER is None:
        from memstore.testing.server_process import ServerProcess

        _SERVER = ServerProcess(os.path.join(_TMP, "served.duckdb"), config=CONFIG).start()
        atexit.register(_SERVER.stop)
    return _SERVER.store


def new_store(index: Any = None, ttl: Any = None) -> ConformanceStore:
    """A fresh, empty store for one test (embedded file, or the served store after a reset)."""
    if os.environ.get("MEMSTORE_LG_TARGET", "embedded") == "serve":
        from memstore import Memory

        memory = Memory(_served_store())      # a served store: Memory() connects to its server
        memory.reset()
        return ConformanceStore(memory, index=index, ttl=ttl)
    path = tempfile.mktemp(suffix=".duckdb", dir=_TMP)
    return ConformanceStore(path, index=index, ttl=ttl, config=CONFIG)


@contextmanager
def _from_conn_string(_conn: str = "", *, index: Any = None, ttl: Any = None, **_: Any) -> Iterator[ConformanceStore]:
    store = new_store(index=index, ttl=ttl)
    try:
        yield store
    finally:
        store.close()


class SqliteStore:
    from_conn_string = staticmethod(_from_conn_string)


class PostgresStore(SqliteStore):
    pass


def InMemoryStore(*, index: Any = None, ttl: Any = None, **_: Any) -> ConformanceStore:
    return new_store(index=index, ttl=ttl)


class _Conn:
    """psycopg.Connection stand-in: the Postgres fixtures create and drop a database per test."""

    @classmethod
    @contextmanager
    def connect(cls, *_: Any, **__: Any) -> Iterator[_Conn]:
        yield cls()

    def execute(self, *_: Any, **__: Any) -> None:
        return None


def _module(name: str, **attrs: Any) -> None:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod


def install() -> None:
    """Register the stand-in modules (call before the upstream test modules are imported)."""
    import langgraph.store.memory as memory_mod

    memory_mod.InMemoryStore = InMemoryStore            # the checkpoint suite builds InMemoryStore()
    missing = lambda *a, **k: (_ for _ in ()).throw(NotImplementedError("backend internal"))  # noqa: E731
    _module("langgraph.store.sqlite", SqliteStore=SqliteStore, AsyncSqliteStore=SqliteStore)
    _module("langgraph.store.sqlite.base", NS_MATCH_FUNCTION="", BaseSqliteStore=SqliteStore, SqliteIndexConfig=dict,
            _escape_glob_literal=missing, _namespace_match_pattern=missing)
    _module("langgraph.store.postgres", PostgresStore=PostgresStore, AsyncPostgresStore=PostgresStore)
    _module("langgraph.store.postgres.base", _escape_like_literal=missing, _namespace_match_pattern=missing)
    _module("psycopg", Connection=_Conn, AsyncConnection=_Conn)


def _character_embeddings() -> type:
    """LangGraph's test embedding (character frequencies through fixed random projections), as the
    Postgres suite's conftest defines it; the other suites bring their own copy."""
    import math
    import random
    from collections import Counter, defaultdict

    from langchain_core.embeddings import Embeddings

    class CharacterEmbeddings(Embeddings):
        def __init__(self, dims: int = 50, seed: int = 42) -> None:
            self._rng = random.Random(seed)
            self.dims = dims
            self._proj: dict[str, list[float]] = defaultdict(
                lambda: [self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)])

        def _one(self, text: str) -> list[float]:
            counts, total = Counter(text), len(text)
            if not total:
                return [0.0] * self.dims
            vec = [0.0] * self.dims
            for ch, n in counts.items():
                for i, p in enumerate(self._proj[ch]):
                    vec[i] += n / total * p
            norm = math.sqrt(sum(x * x for x in vec))
            return [x / norm for x in vec] if norm else vec

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [self._one(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self._one(text)

        def __eq__(self, other: Any) -> bool:
            return isinstance(other, CharacterEmbeddings) and self.dims == other.dims

    return CharacterEmbeddings


CharacterEmbeddings = _character_embeddings()
