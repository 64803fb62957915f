"""Step 8: write every projection in ONE transaction. If any write fails, nothing is stored and
StoreWriteError names the failed table."""
from __future__ import annotations

import time
from typing import Any

from memstore.ids import new_id
from memstore.pipeline.types import AddState
from memstore.store.database import registered

# Order matters only for readability; all of it commits or none of it does.
TABLE_ORDER = ("memories", "entity_postings", "keyword_postings", "memory_links", "history", "messages",
               "extraction_runs")


def commit_rows(state: AddState, rt: Any) -> AddState:
    t0 = time.perf_counter()
    db, cfg = rt.db, rt.config
    state.results = [{"id": f.id, "memory": f.text, "event": "ADD"} for f in state.facts if f.outcome == "added"]
    with db.transaction("commit"):
        db.checkpoint("write:entities")
        with registered(db, "new_entities", state.tables["entities"]):
            db.run("queries/insert_entities")
        for table in TABLE_ORDER:
            db.insert_arrow(table, state.tables[table])
        _supersede(state, rt)
        if cfg.messages_kept is not None:
            db.checkpoint("write:prune_messages")
            db.run("queries/prune_messages", {"scope_key": state.scope.key, "keep": cfg.messages_kept})
    state.timings["store"] = time.perf_counter() - t0
    return state


def _supersede(state: AddState, rt: Any) -> None:
    db, cfg = rt.db, rt.config
    for f in state.facts:
        if f.outcome != "added" or not f.supersedes:
            continue
        db.checkpoint("write:supersede")
        closed = db.rows("queries/supersede_memories", {
            "at": f.valid_from or state.timestamp or state.now, "new_id": f.id, "now": state.now,
            "ids": list(dict.fromkeys(f.supersedes)), "scope_key": state.scope.key})
        for mid, text in closed:
            if cfg.history != "off":
                db.checkpoint("write:history")
                db.run("queries/insert_history", history_params(
                    state, mid, "SUPERSEDE", text if cfg.history == "full" else None,
                    f.text if cfg.history == "full" else None))
            state.results.append({"id": mid, "memory": text, "event": "SUPERSEDE", "superseded_by": f.id})


def history_params(state: AddState, memory_id: str, event: str, old: str | None, new: str | None) -> dict:
    sc = state.scope
    return {"id": new_id(), "memory_id": memory_id, "event": event, "old_memory": old, "new_memory": new,
            "user_id": sc.user_id, "agent_id": sc.agent_id, "run_id": sc.run_id, "scope_key": sc.key, "actor_id": state.actor_id,
            "role": "user", "created_at": state.now}
