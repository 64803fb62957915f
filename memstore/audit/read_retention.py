"""Old reads go: a `reads` row older than its retention is deleted; forget() also deletes the analyst
reads that name the erased scope in their query (`erase_mentions`).

The retention of a read is the most specific `set_retention("reads", days, user_id=...)` policy
matching its scope (retention_policies, as for messages), else the store's `audit.retain_days`
(None: kept). `apply_retention()` runs it with the other targets; a running read log runs it hourly.
"""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from memstore.core.timeutil import utcnow
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database


def expire_reads(db: Database, *, default_days: int | None, now: dt.datetime | None = None,
                 dry_run: bool = False) -> int:
    """Delete (or with `dry_run` only count) the reads past their retention; returns how many."""
    now = now or utcnow()
    with write_unit(db, "expire_reads", cache_follows=True):      # no scope's memories change
        db.scopes_changed(())
        due = [r[0] for r in db.rows("queries/retention_due_reads", {"now": now, "default_days": default_days})]
        if due and not dry_run:
            db.run("queries/retention_delete_reads", {"rids": due}, writes=True)
    return len(due)


def erase_mentions(db: Database, scope: dict[str, str | None]) -> int:
    """Delete the analyst reads of no scope whose query names one of `scope`'s values (forget()
    erases the scope's own reads by their identity columns; these name it only in their text)."""
    values = [v for v in scope.values() if v]
    if not values:
        return 0
    with write_unit(db, "forget:reads", cache_follows=True):
        db.scopes_changed(())
        return int(db.run("queries/erase_reads_mentioning", {"values": values}, writes=True).fetchone()[0])
