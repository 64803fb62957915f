"""The services a Memory runs on: database, embedder, NLP and extractor, built once from config.

A plain record with no side effects: opening a store (finishing a pending erasure) is done once by
whoever opens it (`Memory.__init__`), not every time a Runtime is built or copied.
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memstore.core.config import MemoryConfig
from memstore.providers.protocols import NLP, Embedder, Extractor
from memstore.store.database import Database
from memstore.store.scope_cache import ScopeCache

# (query, vector) given for the current call: a server's front embedded the query already
_GIVEN: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar("memstore_given_vector", default=None)


@contextlib.contextmanager
def given_vector(query: str, vector: Any) -> Iterator[None]:
    """Within the block (this thread or task), `Runtime.embed_query(query)` is `vector` for exactly
    that text (None: embed as usual). What `Memory.search_with_vector` uses.

    >>> with given_vector("hi", [[7.0]]):
    ...     _GIVEN.get()
    ('hi', [[7.0]])
    """
    token = _GIVEN.set((query, vector) if vector is not None else None)
    try:
        yield
    finally:
        _GIVEN.reset(token)


T = TypeVar("T")


@dataclass
class Runtime:
    config: MemoryConfig
    db: Database | None          # None in a worker process: it prepares adds and never opens the store
    embedder: Embedder
    reranker: Any = None
    cache: ScopeCache | None = None      # the in-process copy of the scopes (given to `db`), owned here
    _nlp: NLP | None = None
    _extractor: Extractor | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    model_epoch: int = 0          # odd while a re-embedding swaps vectors and model (governance/reembed.py)

    def __post_init__(self) -> None:
        if self.cache is None and self.db is not None:
            self.cache = self.db.scope_cache

    @property
    def nlp(self) -> NLP:
        with self._lock:
            if self._nlp is None:
                from memstore.providers.nlp import shared_nlp

                self._nlp = shared_nlp(self.config.nlp.model, tuple(self.config.nlp.disable))
            return self._nlp

    @property
    def extractor(self) -> Extractor:
        if self._extractor is None:
            from memstore.extraction.factory import build_extractor

            nlp = self.nlp if self.config.llm.provider == "heuristic" else None
            with self._lock:
                if self._extractor is None:
                    self._extractor = build_extractor(self.config.llm, nlp)
        return self._extractor

    def embed_query(self, query: str) -> Any:
        """The query's vector: the one given for this call (`given_vector`), else the embedder's."""
        hit = _GIVEN.get()
        if hit is not None and hit[0] == query:
            return hit[1]
        return self.embedder.embed([query])

    def one_model(self, search: Callable[[], T]) -> T:
        """`search()` with the query embedded by the model that made the vectors it reads: run
        again if a re-embedding swapped both while it ran (a seqlock on `model_epoch`)."""
        for _ in range(1000):
            epoch = self.model_epoch
            if epoch % 2:                 # a swap is committing: wait for it
                time.sleep(0.005)
                continue
            out = search()
            if self.model_epoch == epoch:
                return out
        return search()
