"""Step 2: recent messages of the scope and the stored memories most related to the new ones."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memstore.core.model import AddState, ContextMemory, Message
from memstore.core.rules.context_probe import probe_text
from memstore.pipeline.beside import beside

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def gather_context(state: AddState, rt: Runtime) -> AddState:
    # a procedural summary reads only its own run
    if not state.infer or not state.options.gather_context or state.memory_type:
        return state
    t0 = time.perf_counter()
    embed_s = 0.0
    cfg, db = rt.config, rt.db
    # Recent messages and related memories are for the LLM; the heuristic extractor reads neither.
    llm = cfg.llm.provider != "heuristic"
    read = cfg.context_messages > 0 and llm
    # for the LLM's links and supersession: the memories nearest to the new messages
    near = cfg.context_memories > 0 and llm and db.scope_cache.entry(db, state.scope.key).size > 0
    vec: Any = None

    def read_recent() -> None:
        rows = db.dicts("queries/recent_messages", {"scope_key": state.scope.key, "n": cfg.context_messages})
        state.context_messages = [Message(r["role"], r["content"], r["name"], r["created_at"], r["id"]) for r in rows]

    def embed_messages() -> None:
        nonlocal vec, embed_s
        text = probe_text(state.messages)      # the same probe as ingest's (core/rules/context_probe.py)
        t1 = time.perf_counter()
        vec = rt.embedder.embed([text])
        embed_s = time.perf_counter() - t1

    if read and near and getattr(rt.embedder, "releases_gil", True):
        beside(read_recent, embed_messages)     # the read while the embedder works (pipeline/beside.py)
    else:
        if read:
            read_recent()
        if near:
            embed_messages()
    if near:
        state.timings["embed"] = state.timings.get("embed", 0.0) + embed_s
        # the in-process copy of the scope (store/scope_cache.py): no scan of the memories table
        rows = db.scope_cache.nearest(db, state.scope.key, vec, state.now, cfg.context_memories)
        state.context_memories = [ContextMemory(f"m{i + 1}", mid, text) for i, (_, mid, _, text) in enumerate(rows)]
    # disjoint from "embed": timings add up (the read beside the embedder: what it added to the wait)
    state.timings["context"] = max(time.perf_counter() - t0 - embed_s, 0.0)
    return state
