"""Helpers of the ingest runner that need no store: the cut of a conversation into extraction
batches, the text a batch probes related memories with, and a cache of bulk-parsed spaCy docs."""
from __future__ import annotations

import re
from typing import Any

from memstore.core.model import Message


def split_batches(n: int, size: int) -> list[range]:
    """Cut n messages of one conversation into round(n / size) batches of nearly equal length
    (each between ½ and 1½ × size): 29 messages at size 20 make one call, not 20 + 9. A short
    tail would cost a whole LLM call for a few messages; batches never span conversations.

    >>> [len(b) for b in split_batches(29, 20)], [len(b) for b in split_batches(31, 20)]
    ([29], [16, 15])
    >>> [len(b) for b in split_batches(5, 20)], split_batches(0, 20)
    ([5], [])
    >>> [len(b) for b in split_batches(100, 20)]
    [20, 20, 20, 20, 20]
    """
    if n <= 0:
        return []
    k = max(1, int(n / size + 0.5))
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


_FIRST_PERSON_SENTENCE = re.compile(r"[^.!?\n]*\b(?:I|I'm|I've|I'd|I'll|[Mm]y|me|[Ww]e|[Oo]ur)\b[^.!?\n]*[.!?]?")


def context_probe(messages: list[Message]) -> list[Message]:
    """The text by which a batch looks up related stored memories for the LLM: what the user says
    about themselves (first-person sentences), else all the user's messages, else the batch.
    Assistant answers are long and say little about the person, and a long query costs more to
    embed (~40 ms at 256 tokens on this machine's cores, against ~1 ms for a short one in a batch).

    >>> msgs = [Message("user", "Can you explain decorators? Also, I moved to Lisbon."),
    ...         Message("assistant", "Sure! A decorator is a function that ...")]
    >>> [m.content for m in context_probe(msgs)]
    ['Also, I moved to Lisbon.']
    >>> [m.content for m in context_probe([Message("user", "Explain decorators")])]
    ['Explain decorators']
    """
    user = [m for m in messages if m.role == "user"]
    said = [s.strip() for m in user for s in _FIRST_PERSON_SENTENCE.findall(m.content)]
    if said:
        return [Message("user", " ".join(said))]
    return user or messages


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
