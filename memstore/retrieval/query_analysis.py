"""What a query asks for: its keyword lemmas and the entities it names.

A query needs only the lemmas (for BM25, the same rule as the index: `SpacyNLP`'s terms) and the
part-of-speech tags (nouns and proper nouns as entity candidates). Entity spans come from every
1-4 word n-gram of the query, a superset of what the NER component would find in ten words, so
search runs the shared pipeline's components up to the lemmatizer only: no NER, no parser, whatever
`nlp.disable` says (the pipeline is used, never changed, so a writer thread can use it meanwhile).
That costs ~1-3 ms for a short query instead of ~12 ms; repeated queries come from a per-process
cache.

>>> from memstore.providers.nlp import SpacyNLP
>>> q = analyze_query(SpacyNLP(), "Where does alice live now?")
>>> sorted(q.terms), "alice" in q.entity_norms
(['alice', 'live'], True)
"""
from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from memstore.ids import entity_id
from memstore.providers.nlp import normalise_entity

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_NGRAM = 4
# components a query does not need: entities come from n-grams, and no lemma depends on these
SKIPPED_COMPONENTS = frozenset({"ner", "parser", "senter", "entity_ruler", "entity_linker", "textcat",
                                "textcat_multilabel", "spancat", "coref"})
_CACHE_SIZE = 2048


@dataclass(frozen=True)
class QueryAnalysis:
    terms: tuple[str, ...] = ()
    entity_norms: dict[str, float] = field(default_factory=dict)   # norm -> match strength

    @property
    def entity_ids(self) -> dict[str, float]:
        return {entity_id(n): s for n, s in self.entity_norms.items()}


_cache: OrderedDict[tuple[int, str], QueryAnalysis] = OrderedDict()
_cache_lock = threading.Lock()


def query_doc(nlp: Any, query: str) -> Any:
    """The query's spaCy Doc from the pipeline's lemma components only (the pipeline is not
    modified: `select_pipes` would change it for every other thread)."""
    pipe = nlp.nlp
    doc = pipe.make_doc(query[:2000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W108 when a user's pipeline has no tagger
        for name, proc in pipe.pipeline:
            if name not in SKIPPED_COMPONENTS:
                doc = proc(doc)
    return doc


def _terms_and_nouns(nlp: Any, query: str) -> tuple[list[str], list[str]]:
    doc = query_doc(nlp, query)
    analyze_doc = getattr(nlp, "_analyze_doc", None)
    if analyze_doc is None:  # an NLP object without SpacyNLP's doc rule: run it whole
        a = nlp.analyze([query])[0]
    else:
        a = analyze_doc(doc)
    return list(a.terms), [e.norm for e in a.entities]


def analyze_query(nlp: Any, query: str) -> QueryAnalysis:
    """Lemmas for BM25; entity candidates from nouns / proper nouns plus every 1-4 word n-gram of
    the query (so a lower-case "alice" still finds the entity Alice). N-grams that name no stored
    entity cost nothing: they match no posting. Cached per process by (pipeline, query)."""
    key = (id(nlp), query)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    terms, nouns = _terms_and_nouns(nlp, query)
    ents: dict[str, float] = dict.fromkeys(nouns, 1.0)
    words = _WORD.findall(query.lower())
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            norm = normalise_entity(" ".join(words[i:i + n]))
            if norm and len(norm) > 2:
                ents.setdefault(norm, 1.0)
    # lemma forms of single words ("hikes" -> "hike") as slightly weaker matches
    for t in terms:
        ents.setdefault(t, 0.9)
    out = QueryAnalysis(terms=tuple(terms), entity_norms=ents)
    with _cache_lock:
        _cache[key] = out
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return out
