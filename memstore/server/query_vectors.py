"""Search with the query's vector computed elsewhere: a front process embeds the query, the owner
searches with that vector instead of embedding the text again.

`GivenVectors(embedder)` stands in for the owner's embedder: inside `given(query, vector)`, a call
`embed([query])` for exactly that text returns `vector`; every other call goes to the embedder.
The search code is unchanged (memstore/retrieval/search.py embeds the query through
`rt.embedder`), so results are those of the same search with the text embedded here.

>>> class Twice:
...     def embed(self, texts): return [[2.0 * len(t)] for t in texts]
>>> e = GivenVectors(Twice())
>>> with given("hi", [[7.0]]):
...     e.embed(["hi"]), e.embed(["other"])
([[7.0]], [[10.0]])
>>> e.embed(["hi"])
[[4.0]]
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

_GIVEN: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar("memstore_given_vector", default=None)


class GivenVectors:
    """The embedder, except for the query whose vector the current call was given."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def embed(self, texts: list[str]) -> Any:
        hit = _GIVEN.get()
        if hit is not None and len(texts) == 1 and texts[0] == hit[0]:
            return hit[1]
        return self._inner.embed(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def given(query: str, vector: Any) -> Iterator[None]:
    """Within the block, the embedding of `query` is `vector` (None: embed as usual)."""
    token = _GIVEN.set((query, vector) if vector is not None else None)
    try:
        yield
    finally:
        _GIVEN.reset(token)
