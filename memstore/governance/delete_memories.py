"""Delete memories and every row naming them (postings, keyword postings, links) in ONE
transaction; history records a DELETE event (with or without text per the history policy)."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from memstore.identity import Scope
from memstore.ids import new_id
from memstore.store.database import registered
from memstore.store.sqlfiles import load_sql


def delete_memories(rt: Any, *, ids: list[str] | None = None, scope: Scope | None = None,
                    actor_id: str | None = None) -> int:
    """Delete by ids or by identity (every memory whose identity columns match). Returns the count."""
    db, cfg = rt.db, rt.config
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    with db.transaction("delete"):
        if ids is not None:
            rows = db.rows("queries/select_memories_by_id", {"ids": list(ids)})
        else:
            rows = db.rows("queries/select_scope_memories", {
                "user_id": scope.user_id, "agent_id": scope.agent_id, "run_id": scope.run_id})
        if not rows:
            return 0
        if cfg.history != "off":
            full = cfg.history == "full"
            db.checkpoint("write:history")
            db.insert_arrow("history", pa.table({
                "id": [new_id() for _ in rows], "memory_id": [r[0] for r in rows], "event": ["DELETE"] * len(rows),
                "old_memory": pa.array([r[1] if full else None for r in rows], pa.string()),
                "new_memory": pa.array([None] * len(rows), pa.string()),
                "user_id": pa.array([r[2] for r in rows], pa.string()),
                "agent_id": pa.array([r[3] for r in rows], pa.string()),
                "run_id": pa.array([r[4] for r in rows], pa.string()),
                "scope_key": pa.array([r[5] for r in rows], pa.string()),
                "actor_id": pa.array([actor_id] * len(rows), pa.string()),
                "role": pa.array(["user"] * len(rows), pa.string()),
                "created_at": pa.array([now] * len(rows), pa.timestamp("us")),
                "is_deleted": [True] * len(rows)}))
        db.checkpoint("write:memories")
        with registered(db, "doomed", pa.table({"id": [r[0] for r in rows]})):
            db.run("queries/delete_memories")
    return len(rows)
