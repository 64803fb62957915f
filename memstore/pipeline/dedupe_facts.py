"""Step 6: de-duplicate against the WHOLE scope — exact content hash, then near-duplicate vectors.
Runs under the store's write lock so two concurrent adds cannot both store the same fact."""
from __future__ import annotations

import time
from typing import Any

from memstore.pipeline.types import AddState
from memstore.store.database import registered, vectors_table


def dedupe_facts(state: AddState, rt: Any) -> AddState:
    t0 = time.perf_counter()
    db = rt.db
    seen: dict[str, str] = {}
    for f in state.facts:
        if f.hash in seen:
            f.outcome, f.duplicate_of = "duplicate_in_batch", seen[f.hash]
        else:
            seen[f.hash] = f.id
    pending = [f for f in state.facts if f.outcome == "pending"]
    if pending:
        stored = dict(db.rows("queries/dedupe_hash", {"scope_key": state.scope.key,
                                                       "hashes": [f.hash for f in pending]}))
        for f in pending:
            if f.hash in stored:
                f.outcome, f.duplicate_of = "duplicate", stored[f.hash]
    pending = [f for f in state.facts if f.outcome == "pending"]
    if pending and state.infer and rt.config.dedupe_similarity < 1.0:
        table = vectors_table([f.embedding for f in pending], db.dim, idx=list(range(len(pending))))
        with registered(db, "new_facts", table):
            for idx, mid, sim in db.rows("queries/dedupe_semantic", {"scope_key": state.scope.key}):
                if sim is not None and sim >= rt.config.dedupe_similarity:
                    pending[idx].outcome, pending[idx].duplicate_of = "duplicate", mid
    for f in state.facts:
        if f.outcome == "pending":
            f.outcome = "added"
    state.timings["dedupe"] = time.perf_counter() - t0
    return state
