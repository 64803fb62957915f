"""purge_expired(): physically remove memories whose expiration_date has passed, with their entity
and keyword postings and links, in ONE transaction. History keeps one EXPIRE event per memory —
with the text under history="full", without it under "redacted", none under "off".

Reads already hide expired memories, so a purge changes no search or get_all answer; it frees the
space and removes the text from the store.
"""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.identity import Scope
from memstore.core.timeutil import utcnow
from memstore.store.database import registered
from memstore.store.history import history_table, row_events
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.core.config import MemoryConfig
    from memstore.runtime import Runtime
    from memstore.store.database import Database


def purge_expired(rt: Runtime, *, scope: Scope | None = None, now: dt.datetime | None = None,
                  actor_id: str | None = None, dry_run: bool = False) -> list[dict[str, Any]]:
    """Purge expired memories (of `scope`, or of every scope). Returns [{id, user_id, agent_id, run_id}]
    of what was (dry_run: would be) removed."""
    db, cfg = rt.db, rt.config
    now = now or utcnow()
    params = {"now": now, "user_id": scope.user_id if scope else None,
              "agent_id": scope.agent_id if scope else None, "run_id": scope.run_id if scope else None}
    if dry_run:
        rows = db.rows("queries/expired_memories", params)
    else:
        with write_unit(db, "purge_expired"):
            rows = db.rows("queries/expired_memories", params)
            if rows:
                db.scopes_changed(r[5] for r in rows)
                _remove(db, cfg, rows, now, actor_id)
    return [{"id": r[0], "user_id": r[2], "agent_id": r[3], "run_id": r[4]} for r in rows]


def _remove(db: Database, cfg: MemoryConfig, rows: list[tuple], now: dt.datetime, actor_id: str | None) -> None:
    hist = history_table(cfg.history, row_events(rows, "EXPIRE", actor_id=actor_id, now=now), is_deleted=True)
    if hist is not None:
        db.insert_arrow("history", hist)
    with registered(db, "doomed", pa.table({"id": [r[0] for r in rows]})):
        db.run("queries/purge_memories", writes=True)
