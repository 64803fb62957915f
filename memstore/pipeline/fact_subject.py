"""Who a fact stored without a named speaker is about: the person its first word names.

`add("Melanie painted a horse", user_id="conv-26", infer=False)` has no speaker to attribute the
memory to (no message name, no name-like user id: `speaker_name` falls back to "User"), so the
person signal, which matches a query's names against `attributed_to`, could never find it. A bare
third-person fact names its subject first; when spaCy's analysis of the fact (already run for its
entities) marks that leading word as a name (a PERSON, ORG or proper-noun entity), the fact is
attributed to it. No second pass, no parser: a regular expression on the text and a look at the
entities found. "Dance is ..." (tagged a common noun) and "The support group ..." keep "User".

>>> from memstore.providers.nlp import Entity
>>> leading_name("Melanie's son got hurt.", [Entity("Melanie", "melanie", "PERSON")])
'Melanie'
>>> leading_name("Painting helps Melanie relax.", [Entity("Painting", "painting", "NOUN")]) is None
True
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

UNNAMED = "User"                      # speaker_name's answer when nothing names the speaker
NAME_LABELS = frozenset({"PERSON", "ORG", "PROPN"})
_LEAD = re.compile(r"([A-Z][\w-]*)(?:['’]s)?\b")


def leading_name(text: str, entities: Sequence[Any]) -> str | None:
    """The fact's first word when it is title-case and an entity of a name label, else None."""
    m = _LEAD.match(text.lstrip())
    if m is None:
        return None
    word = m.group(1)
    for e in entities:
        if e.label in NAME_LABELS and (e.name == word or e.name.startswith(word + " ")
                                       or e.name in (word + "'s", word + "’s")):
            return word
    return None
