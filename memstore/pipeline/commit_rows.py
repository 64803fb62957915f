"""Step 8: write every projection in ONE transaction. If any write fails, nothing is stored and
StoreWriteError names the failed table."""
from __future__ import annotations

import time
from typing import Any

from memstore.ids import new_id
from memstore.pipeline.types import AddState

# Order matters only for readability; all of it commits or none of it does.
TABLE_ORDER = ("memories", "entity_postings", "keyword_postings", "memory_links", "history", "messages",
               "extraction_runs")


def commit_rows(state: AddState, rt: Any) -> AddState:
    t0 = time.perf_counter()
    db, cfg = rt.db, rt.config
    state.results = [{"id": f.id, "memory": f.text, "event": "ADD"} for f in state.facts if f.outcome == "added"]
    # a plain add(), or one add of a group commit: it keeps the scope cache current itself; inside
    # ingest the outer transaction commits and drops the cache
    own = db.cache_follows
    cache = db.scope_cache
    with db.transaction("commit", keeps_cache=own):
        _insert_entities(db, state.tables["entities"], cache.known_entities if own else set())
        for table in TABLE_ORDER:
            # ingest's stand-in batches appends itself; a plain add writes a few rows per table
            (db.insert_rows if own else db.insert_arrow)(table, state.tables[table])
        closed = _supersede(state, rt)
        pruned = _prune_messages(state, rt, own)
    if own:
        _update_cache(state, db, closed, pruned)
    state.timings["store"] = time.perf_counter() - t0
    return state


def _insert_entities(db: Any, ents: Any, known: set[str]) -> None:
    """Entities are shared by all scopes; the statement is skipped when every one is known to exist."""
    db.checkpoint("write:entities")
    ids = ents.column("id").to_pylist() if ents.num_rows else []
    if not ids or known.issuperset(ids):
        return
    db.upsert_entities(ents)


def _prune_messages(state: AddState, rt: Any, own: bool) -> list[str] | None:
    """Keep the scope's newest `messages_kept` add() messages. A plain add() knows from the scope
    cache which ids go (no statement while the scope is under the limit); inside ingest the
    sorting query decides. Returns the pruned ids (None: not tracked)."""
    db, keep = rt.db, rt.config.messages_kept
    if keep is None:
        return None
    db.checkpoint("write:prune_messages")
    if not own:
        db.run("queries/prune_messages", {"scope_key": state.scope.key, "keep": keep})
        return None
    drop = db.scope_cache.messages_to_prune(db, state.scope.key, _message_keys(state), keep)
    db.prune_messages(state.scope.key, drop)
    return drop


def _update_cache(state: AddState, db: Any, closed: list[str], pruned: list[str] | None) -> None:
    """After the COMMIT: the scope cache learns what this add stored and closed."""
    current = [f for f in state.facts if f.outcome == "added" and f.superseded_by is None]
    try:
        db.scope_cache.apply_add(db, state.scope.key, {
            "ids": [f.id for f in current], "hashes": [f.hash for f in current], "texts": [f.text for f in current],
            "vecs": [f.embedding for f in current], "expires": [state.expiration_date] * len(current)}, closed,
            _message_keys(state) if pruned is not None else None, pruned)
        ents = state.tables["entities"]
        if ents.num_rows:
            db.scope_cache.known_entities.update(ents.column("id").to_pylist())
    except Exception:   # the data is committed; a cache that cannot follow is simply dropped
        db.scope_cache.invalidate()


def _message_keys(state: AddState) -> list[tuple[Any, str]]:
    msgs = state.tables["messages"]
    return list(zip(msgs.column("created_at").to_pylist(), msgs.column("id").to_pylist())) if msgs.num_rows else []


def _supersede(state: AddState, rt: Any) -> list[str]:
    """Close the validity of what the new facts supersede; returns the closed memory ids."""
    db, cfg = rt.db, rt.config
    closed_ids: list[str] = []
    for f in state.facts:
        if f.outcome != "added" or not (f.supersedes or f.narrows):
            continue
        db.checkpoint("write:supersede")
        params = {"at": f.valid_from or state.timestamp or state.now, "new_id": f.id, "now": state.now,
                  "scope_key": state.scope.key}
        closed = db.rows("queries/supersede_memories", {**params, "ids": list(dict.fromkeys(f.supersedes))}) \
            if f.supersedes else []
        if f.narrows:       # a late fact: older facts whose interval it falls in now end where it begins
            closed += db.rows("queries/narrow_validity", {**params, "ids": f.narrows})
        for mid, text in closed:
            closed_ids.append(mid)
            if cfg.history != "off":
                db.checkpoint("write:history")
                db.run("queries/insert_history", history_params(
                    state, mid, "SUPERSEDE", text if cfg.history == "full" else None,
                    f.text if cfg.history == "full" else None))
            state.results.append({"id": mid, "memory": text, "event": "SUPERSEDE", "superseded_by": f.id})
    return closed_ids


def history_params(state: AddState, memory_id: str, event: str, old: str | None, new: str | None) -> dict:
    sc = state.scope
    return {"id": new_id(), "memory_id": memory_id, "event": event, "old_memory": old, "new_memory": new,
            "user_id": sc.user_id, "agent_id": sc.agent_id, "run_id": sc.run_id, "scope_key": sc.key, "actor_id": state.actor_id,
            "role": "user", "created_at": state.now}
