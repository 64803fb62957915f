"""Sentences parsed by spaCy in bulk for the offline extractor (memstore/extraction/extract_heuristic.py):
ingest parses a group's sentences in one pass, and so do a server front's and a worker's batches of
adds (memstore/pipeline/workers.py). A short sentence costs spaCy far less inside a batch than alone.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from memstore.extraction.extract_heuristic import HeuristicExtractor


class DocCache:
    """Callable like a spaCy pipeline; returns the docs that `prime` parsed in bulk.

    >>> calls = []
    >>> def nlp(text): calls.append(text); return text.upper()
    >>> nlp.pipe = lambda texts, batch_size: [t.upper() for t in texts]
    >>> c = DocCache(nlp); c.prime(["a", "b"]); (c("a"), c("z"), calls)
    ('A', 'Z', ['z'])
    """

    def __init__(self, nlp: Any, tag: Any = None) -> None:
        self._nlp = nlp
        self._docs: dict[str, Any] = {}
        # texts -> docs before the parse: `tag` (SpacyNLP.pipe with its compiled rules) or the
        # pipeline; the extractor reads no entities, so its docs skip the entity recognizer
        self._tag = tag
        self._skip = {"disable": ["ner"]} if "ner" in getattr(nlp, "pipe_names", ()) else {}

    def prime(self, texts: Any) -> None:
        """Analyse `texts` in bulk, with the pipeline's dependency parser when it has one (loaded
        but disabled by default, so only these sentences, the extractor's candidates, pay for it)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._docs]
        docs = self._tag(todo) if self._tag else self._nlp.pipe(todo, batch_size=256, **self._skip)
        parser = self._parser()
        if parser is not None and todo:
            docs = parser.pipe(docs, batch_size=256)
        self._docs.update(zip(todo, docs))

    def _parser(self) -> Any:
        try:
            return self._nlp.get_pipe("parser")
        except (AttributeError, KeyError):
            return None

    def __call__(self, text: str) -> Any:
        doc = self._docs.get(text)
        if doc is None:
            doc = next(iter(self._tag([text]))) if self._tag else self._nlp(text, **self._skip)
        return doc

    def clear(self) -> None:
        self._docs.clear()

    def get_pipe(self, name: str) -> Any:
        """The wrapped pipeline's component (the extractor runs its parser on cached docs)."""
        return self._nlp.get_pipe(name)

    @property
    def pipe_names(self) -> list[str]:
        return list(getattr(self._nlp, "pipe_names", ()))


def bulk_extractor(nlp: Any, *, sessions: bool = False) -> tuple[DocCache, HeuristicExtractor]:
    """The offline extractor fed from a DocCache over `nlp` (a SpacyNLP: its compiled rules, no
    entity recognizer): `cache.prime(sentences)` parses a batch's sentences in one pass, and a
    sentence not primed is parsed as usual. Returns (cache, extractor)."""
    cache = DocCache(nlp.nlp, tag=lambda texts: nlp.pipe(texts, batch_size=256, skip=("ner",)))
    return cache, HeuristicExtractor(SimpleNamespace(nlp=cache), sessions=sessions)
