"""Step 6: de-duplicate against the WHOLE scope — exact content hash, then near-duplicate vectors.
Runs inside the write unit (under the store's write lock), so two concurrent adds cannot both
store the same fact.

The scope's current memories come from the writer's view (`Writer.entry`: the in-process copy of
the scope, store/scope_cache.py: ~0.2 ms instead of an ~8 ms scan at 100k memories), which already
holds the earlier adds of the same unit (ingest, group commit)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memstore.core.model import AddState
from memstore.core.rules.slots import is_negated

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.writer import Writer


def dedupe_facts(state: AddState, rt: Runtime, w: Writer) -> AddState:
    t0 = time.perf_counter()
    seen: dict[str, str] = {}
    for f in state.facts:
        if f.hash in seen:
            f.outcome, f.duplicate_of = "duplicate_in_batch", seen[f.hash]
        else:
            seen[f.hash] = f.id
    pending = [f for f in state.facts if f.outcome == "pending"]
    semantic = bool(pending) and state.infer and rt.config.dedupe_similarity < 1.0
    stored: dict[str, str] = {}
    nearest: list[tuple[int, str, float, str]] = []
    if pending:
        entry = w.entry(state.scope.key)
        stored = entry.find_hashes([f.hash for f in pending], state.now)
        if semantic:
            nearest = entry.nearest([f.embedding for f in pending], state.now)
    for f in pending:
        if f.hash in stored:
            f.outcome, f.duplicate_of = "duplicate", stored[f.hash]
    for idx, mid, sim, text in nearest:
        f = pending[idx]   # rows come most similar first; opposite polarity is not a duplicate
        if f.outcome == "pending" and sim >= rt.config.dedupe_similarity \
                and is_negated(text) == is_negated(f.text):
            f.outcome, f.duplicate_of = "duplicate", mid
    for f in state.facts:
        if f.outcome == "pending":
            f.outcome = "added"
    ids = {f.id: f for f in state.facts}
    for f in state.facts:       # a repeat of a fact that was itself a stored memory: that memory
        first = ids.get(f.duplicate_of) if f.outcome == "duplicate_in_batch" else None
        if first is not None and first.outcome == "duplicate":
            f.duplicate_of = first.duplicate_of
    state.timings["dedupe"] = time.perf_counter() - t0
    return state
