"""Retention: how many days messages and history text are kept, globally or per scope.

Policies live in the `retention_policies` table (so the CLI, the dashboard and every process see
the same ones). A NULL identity column matches any value; for each record the most specific
matching policy wins; `retain_days=None` keeps forever. Applying retention deletes old messages
and blanks old history text (the events and their times stay, as with history="redacted").

>>> from memstore.store.database import Database
>>> import datetime as dt
>>> db = Database(":memory:", dim=4, embedder="t")
>>> _ = set_policy(db, "messages", 30)
>>> _ = set_policy(db, "messages", None, user_id="keeper")
>>> old = dt.datetime(2020, 1, 1)
>>> for i, u in enumerate(["ann", "keeper"]):
...     _ = db.con.execute("INSERT INTO messages (id, scope_key, user_id, role, content, created_at) "
...                        "VALUES (?, ?, ?, 'user', 'hi', ?)", [str(i), "k" + u, u, old])
>>> apply_retention(db, now=dt.datetime(2020, 3, 1))
{'messages': 1, 'history_text': 0}
>>> db.scalar("SELECT user_id FROM messages")
'keeper'
"""
from __future__ import annotations

import datetime as dt
import hashlib
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.errors import (
    RetentionError,
)
from memstore.core.identity import Scope
from memstore.core.timeutil import utcnow
from memstore.store.database import registered
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

TARGETS = ("messages", "history_text", "reads")      # reads: memstore/audit/read_retention.py applies it


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> Scope:
    if user_id is None and agent_id is None and run_id is None:
        return Scope()
    return Scope.from_kwargs(user_id, agent_id, run_id)


def policy_id(target: str, scope: Scope) -> str:
    """Stable id of a (target, scope) policy, so setting it again replaces it."""
    return hashlib.md5(f"{target}\x00{scope.key}".encode()).hexdigest()


def _check(target: str, retain_days: Any = 0) -> None:
    if target not in TARGETS:
        raise RetentionError(f"unknown retention target {target!r}", hint=f"use one of {', '.join(TARGETS)}",
                             target=target)
    if retain_days is not None and (isinstance(retain_days, bool) or not isinstance(retain_days, int)
                                    or retain_days < 0):
        raise RetentionError(f"retain_days must be a whole number of days >= 0 or None, got {retain_days!r}",
                             hint="None keeps forever", retain_days=retain_days)


def set_policy(db: Database, target: str, retain_days: int | None, *, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
    """Create or replace the policy of (target, scope). Returns it."""
    _check(target, retain_days)
    scope = _scope(user_id, agent_id, run_id)
    row = {"id": policy_id(target, scope), "target": target, "user_id": scope.user_id, "agent_id": scope.agent_id,
           "run_id": scope.run_id, "retain_days": retain_days,
           "updated_at": utcnow()}
    with write_unit(db, "set_retention"):
        db.run("queries/upsert_retention_policy", row)
    return {k: v for k, v in row.items() if k != "id"}


def clear_policy(db: Database, target: str, *, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None) -> bool:
    """Remove the policy of (target, scope); True if one existed."""
    _check(target)
    with write_unit(db, "clear_retention"):
        n = db.run("queries/delete_retention_policy",
                   {"id": policy_id(target, _scope(user_id, agent_id, run_id))}).fetchone()[0]
    return bool(n)


def apply_retention(db: Database, *, now: dt.datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Delete due messages and blank due history text in one transaction; returns the counts."""
    now = now or utcnow()
    with write_unit(db, "apply_retention"):
        msg_ids = [r[0] for r in db.rows("queries/retention_due_messages", {"now": now})]
        hist_ids = [r[0] for r in db.rows("queries/retention_due_history_text", {"now": now})]
        if not dry_run:
            if msg_ids:
                with registered(db, "due", pa.table({"id": pa.array(msg_ids, pa.string())})):
                    db.run("queries/retention_delete_messages", writes=True)
            db.run("queries/retention_redact_raw_answers", {"now": now})   # the model's rendering of them
            if hist_ids:
                with registered(db, "due", pa.table({"id": pa.array(hist_ids, pa.string())})):
                    db.run("queries/retention_redact_history", writes=True)
    return {"messages": len(msg_ids), "history_text": len(hist_ids)}
