"""Step 4: entities and keyword terms of each fact (one spaCy pass over the batch)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memstore.core.ids import content_hash, new_id
from memstore.core.model import AddState
from memstore.pipeline.supersede_by_slot import read_slots

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def analyze_facts(state: AddState, rt: Runtime) -> AddState:
    t0 = time.perf_counter()
    for f in state.facts:
        f.id = f.id or new_id()
        f.hash = content_hash(f.text)
    if state.facts:
        for f, a in zip(state.facts, rt.nlp.analyze([f.text for f in state.facts])):
            f.entities = a.entities
            f.terms = dict(a.terms)
        read_slots(state.facts)      # what each fact states (truth rules), before the write
    state.timings["nlp"] = time.perf_counter() - t0
    return state
