"""Step 4: entities and keyword terms of each fact (one spaCy pass over the batch).

A raw turn (`infer=False`), and a message the offline extractor keeps as written (`Fact.verbatim`:
a request, a piece of an answer), is not parsed: its terms and entities come from the light analysis
(providers/light_analysis.py: words, the rule lemmatizer's lemma of each, names and nouns; ~1 ms
for 1,000 characters instead of ~25 ms of spaCy's models). Raw storage pays only for what search
reads."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memstore.core.ids import content_hash, new_id
from memstore.core.model import AddState
from memstore.pipeline.supersede_by_slot import read_slots
from memstore.providers.light_analysis import light_analyze

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def analyze_facts(state: AddState, rt: Runtime) -> AddState:
    t0 = time.perf_counter()
    for f in state.facts:
        f.id = f.id or new_id()
        f.hash = content_hash(f.text)
    if state.facts:
        for raw in (False, True):
            part = [f for f in state.facts if (not state.infer or f.verbatim) is raw]
            for f, a in zip(part, _analyze(rt.nlp, [f.text for f in part], raw=raw) if part else ()):
                f.entities = a.entities
                f.terms = dict(a.terms)
        read_slots(state.facts)      # what each fact states (truth rules), before the write
    state.timings["nlp"] = time.perf_counter() - t0
    return state


def _analyze(nlp: Any, texts: list[str], *, raw: bool) -> list[Any]:
    """spaCy's analysis, or for raw turns the light one (where the NLP is a spaCy pipeline)."""
    if raw and getattr(nlp, "nlp", None) is not None:
        return light_analyze(nlp, texts)
    return nlp.analyze(texts)
