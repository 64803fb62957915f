"""Step 5: one batched embedding call for the facts (raw turns are prefixed with their speaker)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memstore.core.model import AddState

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def embed_facts(state: AddState, rt: Runtime) -> AddState:
    t0 = time.perf_counter()
    if state.facts:
        # "Caroline: I went to the support group" recalls far better than the bare turn (.29 -> .45 on LoCoMo).
        texts = [f"{f.attributed_to}: {f.text}" if not state.infer and f.attributed_to else f.text
                 for f in state.facts]
        vecs = rt.embedder.embed(texts)
        for f, v in zip(state.facts, vecs):
            f.embedding = v
        state.embedded_with = getattr(rt.embedder, "name", None)
    state.timings["embed"] = state.timings.get("embed", 0.0) + time.perf_counter() - t0
    return state
