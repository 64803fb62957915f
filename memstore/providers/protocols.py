"""The seams between memstore and its models: what an embedder, an extractor and the NLP
analyser must offer. Any object with these methods works (they are `typing.Protocol`s), so a
new provider needs no base class.

>>> from memstore.providers.embed_hashing import HashingEmbedder
>>> isinstance(HashingEmbedder(), Embedder)
True
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit-length-or-not float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """An (n, dim) float32 array for n texts."""
        ...


@runtime_checkable
class Extractor(Protocol):
    """Messages to facts: ONE call per add() (an LLM, or the offline heuristic fallback)."""

    name: str

    def extract(self, messages: Sequence[Any], context: Sequence[Any], *, speaker: str,
                prompt: str | None = None, recent: Sequence[Any] = ()) -> Any:
        """An Extraction (status, facts, model, prompt_version, latency, raw answer); `recent`:
        the messages before these, as context."""
        ...


@runtime_checkable
class NLP(Protocol):
    """Entities and keyword terms of texts (spaCy here)."""

    def analyze(self, texts: Sequence[str], batch_size: int = 64) -> list[Any]:
        """One Analysis (entities, terms) per text."""
        ...

    def terms(self, text: str) -> Counter:
        """Keyword terms (lemmas) of a text with their counts."""
        ...
