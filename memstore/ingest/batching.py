"""Helpers of the ingest runner that need no store: the cut of a conversation into extraction
batches and the text a batch probes related memories with (the cache of bulk-parsed spaCy docs is
memstore/extraction/doc_cache.py)."""
from __future__ import annotations

import re

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
