"""The context probe: the text by which an LLM extraction looks up the related stored memories it
is shown (one rule for `add()` and for `ingest`, so the same conversation shows the LLM the same
context through either door).

What the user says about themselves (first-person sentences), else all the user's messages, else
the batch; at most PROBE_CHARS characters. Assistant answers are long and say little about the
person, and a long query costs more to embed (~40 ms at 256 tokens on 2 cores, against ~1 ms for
a short one in a batch).

>>> from memstore.core.model import Message
>>> msgs = [Message("user", "Can you explain decorators? Also, I moved to Lisbon."),
...         Message("assistant", "Sure! A decorator is a function that ...")]
>>> probe_text(msgs)
'Also, I moved to Lisbon.'
>>> probe_text([Message("user", "Explain decorators")])
'Explain decorators'
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from memstore.core.model import Message

PROBE_CHARS = 600
_FIRST_PERSON_SENTENCE = re.compile(r"[^.!?\n]*\b(?:I|I'm|I've|I'd|I'll|[Mm]y|me|[Ww]e|[Oo]ur)\b[^.!?\n]*[.!?]?")


def context_probe(messages: Sequence[Message]) -> list[Message]:
    """The messages the probe is made of (see the module docstring)."""
    user = [m for m in messages if m.role == "user"]
    said = [s.strip() for m in user for s in _FIRST_PERSON_SENTENCE.findall(m.content)]
    if said:
        return [Message("user", " ".join(said))]
    return user or list(messages)


def probe_text(messages: Sequence[Message]) -> str:
    """The probe's text, embedded to find the memories nearest to these messages."""
    return "\n".join(m.content for m in context_probe(messages))[:PROBE_CHARS]
