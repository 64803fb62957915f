"""purge_expired(): physically remove memories whose expiration_date has passed, with their entity
and keyword postings and links, in ONE transaction. History keeps one EXPIRE event per memory —
with the text under history="full", without it under "redacted", none under "off".

Reads already hide expired memories, so a purge changes no search or get_all answer; it frees the
space and removes the text from the store.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from memstore.identity import Scope
from memstore.ids import new_id
from memstore.store.database import registered


def purge_expired(rt: Any, *, scope: Scope | None = None, now: dt.datetime | None = None,
                  actor_id: str | None = None, dry_run: bool = False) -> list[dict[str, Any]]:
    """Purge expired memories (of `scope`, or of every scope). Returns [{id, user_id, agent_id, run_id}]
    of what was (dry_run: would be) removed."""
    db, cfg = rt.db, rt.config
    now = now or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    params = {"now": now, "user_id": scope.user_id if scope else None,
              "agent_id": scope.agent_id if scope else None, "run_id": scope.run_id if scope else None}
    if dry_run:
        rows = db.rows("queries/expired_memories", params)
    else:
        with db.transaction("purge_expired"):
            rows = db.rows("queries/expired_memories", params)
            if rows:
                _remove(db, cfg, rows, now, actor_id)
    return [{"id": r[0], "user_id": r[2], "agent_id": r[3], "run_id": r[4]} for r in rows]


def _remove(db: Any, cfg: Any, rows: list[tuple], now: dt.datetime, actor_id: str | None) -> None:
    n = len(rows)
    if cfg.history != "off":
        full = cfg.history == "full"
        db.insert_arrow("history", pa.table({
            "id": [new_id() for _ in rows], "memory_id": [r[0] for r in rows], "event": ["EXPIRE"] * n,
            "old_memory": pa.array([r[1] if full else None for r in rows], pa.string()),
            "new_memory": pa.array([None] * n, pa.string()),
            "user_id": pa.array([r[2] for r in rows], pa.string()),
            "agent_id": pa.array([r[3] for r in rows], pa.string()),
            "run_id": pa.array([r[4] for r in rows], pa.string()),
            "scope_key": pa.array([r[5] for r in rows], pa.string()),
            "actor_id": pa.array([actor_id] * n, pa.string()),
            "role": pa.array(["user"] * n, pa.string()),
            "created_at": pa.array([now] * n, pa.timestamp("us")),
            "is_deleted": [True] * n}))
    db.checkpoint("write:purge")
    with registered(db, "doomed", pa.table({"id": [r[0] for r in rows]})):
        db.run("queries/purge_memories")
