"""What a query asks for: its keyword lemmas and the entities it names.

>>> from memstore.providers.nlp import SpacyNLP
>>> q = analyze_query(SpacyNLP(), "Where does alice live now?")
>>> sorted(q.terms), "alice" in q.entity_norms
(['alice', 'live'], True)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from memstore.ids import entity_id
from memstore.providers.nlp import normalise_entity

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_NGRAM = 3


@dataclass
class QueryAnalysis:
    terms: list[str] = field(default_factory=list)
    entity_norms: dict[str, float] = field(default_factory=dict)   # norm -> match strength

    @property
    def entity_ids(self) -> dict[str, float]:
        return {entity_id(n): s for n, s in self.entity_norms.items()}


def analyze_query(nlp, query: str) -> QueryAnalysis:  # noqa: ANN001 - SpacyNLP
    """Lemmas for BM25; entity candidates from NER plus every 1–3 word n-gram of the query (so a
    lower-case "alice" still finds the entity Alice). N-grams that name no stored entity cost nothing:
    they match no posting."""
    a = nlp.analyze([query])[0]
    ents: dict[str, float] = {e.norm: 1.0 for e in a.entities}
    words = _WORD.findall(query.lower())
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            norm = normalise_entity(" ".join(words[i:i + n]))
            if norm and len(norm) > 2:
                ents.setdefault(norm, 1.0)
    # lemma forms of single words ("hikes" -> "hike") as slightly weaker matches
    for t in a.terms:
        ents.setdefault(t, 0.9)
    return QueryAnalysis(terms=list(a.terms), entity_norms=ents)
