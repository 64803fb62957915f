"""Delete memories and every row naming them (postings, keyword postings, links) in ONE
transaction; history records a DELETE event (with or without text per the history policy)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from memstore.core.identity import Scope
from memstore.core.timeutil import utcnow
from memstore.store.database import registered
from memstore.store.history import history_table, row_events
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def delete_memories(rt: Runtime, *, ids: list[str] | None = None, scope: Scope | None = None,
                    actor_id: str | None = None) -> int:
    """Delete by ids or by identity (every memory whose identity columns match). Returns the count."""
    db, cfg = rt.db, rt.config
    now = utcnow()
    with write_unit(db, "delete"):
        if ids is not None:
            rows = db.rows("queries/select_memories_by_id", {"ids": list(ids)})
        else:
            rows = db.rows("queries/select_scope_memories", {
                "user_id": scope.user_id, "agent_id": scope.agent_id, "run_id": scope.run_id})
        if not rows:
            return 0
        db.scopes_changed(r[5] for r in rows)
        hist = history_table(cfg.history, row_events(rows, "DELETE", actor_id=actor_id, now=now), is_deleted=True)
        if hist is not None:
            db.insert_arrow("history", hist)
        with registered(db, "doomed", pa.table({"id": [r[0] for r in rows]})):
            db.run("queries/delete_memories", writes=True)
    return len(rows)
