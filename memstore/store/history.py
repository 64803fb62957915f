"""The one history policy and the one builder of `history` rows.

Config `history`: `full` keeps the old and new text of every event, `redacted` keeps the events
and their times but no text, `off` writes no history. Every write path (add, ingest, group commit,
update, delete, resolve, supersession, expiry, purge) builds its rows here, so the policy is
applied in exactly one place.

>>> import datetime as dt
>>> ev = HistoryEvent("m1", "UPDATE", "Alice lives in Boston", "Alice lives in Seattle",
...                   scope_key="u=alice|a=|r=", user_id="alice", created_at=dt.datetime(2024, 1, 1))
>>> history_table("full", [ev]).column("old_memory").to_pylist()
['Alice lives in Boston']
>>> history_table("redacted", [ev]).column("new_memory").to_pylist()
[None]
>>> history_table("off", [ev]) is None
True
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.ids import new_id
from memstore.store.table_rows import Rows

if TYPE_CHECKING:
    from memstore.core.model import AddState

POLICIES = ("full", "redacted", "off")

HISTORY_SCHEMA = pa.schema([
    ("id", pa.string()), ("memory_id", pa.string()), ("event", pa.string()), ("old_memory", pa.string()),
    ("new_memory", pa.string()), ("user_id", pa.string()), ("agent_id", pa.string()), ("run_id", pa.string()),
    ("scope_key", pa.string()), ("actor_id", pa.string()), ("role", pa.string()),
    ("created_at", pa.timestamp("us")), ("is_deleted", pa.bool_()), ("said_at", pa.timestamp("us"))])


@dataclass
class HistoryEvent:
    """One event of one memory (ADD, UPDATE, SUPERSEDE, DELETE, RESOLVE, EXPIRE, …)."""

    memory_id: str
    event: str
    old_memory: str | None = None
    new_memory: str | None = None
    scope_key: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    created_at: dt.datetime | None = None       # when the event was stored
    role: str = "user"
    said_at: dt.datetime | None = None          # when it happened in the conversation (None: no conversation)


def conversation_time(state: AddState, source_ids: Iterable[str] | None = None) -> dt.datetime:
    """When an add's messages were said: the newest message's time (of the messages `source_ids`
    names, when given and found: a fact's own sources), else the add's `timestamp`, else the
    moment it was added (a message with no time was said when it was added).

    >>> import datetime as dt
    >>> from types import SimpleNamespace as NS
    >>> t = dt.datetime(2024, 5, 6)
    >>> conversation_time(NS(messages=[NS(created_at=t), NS(created_at=None)], timestamp=None, now=dt.datetime(2026, 1, 1)))
    datetime.datetime(2024, 5, 6, 0, 0)
    >>> conversation_time(NS(messages=[], timestamp=None, now=t)) == t
    True
    """
    wanted = set(source_ids or ())
    times = [m.created_at for m in state.messages if m.created_at is not None and getattr(m, "id", None) in wanted]
    if not times:
        times = [m.created_at for m in state.messages if m.created_at is not None]
    return max(times) if times else (state.timestamp or state.now)


def state_event(state: AddState, memory_id: str, event: str, old: str | None, new: str | None,
                source_ids: Iterable[str] | None = None) -> HistoryEvent:
    """An event written by an add (or an ingest batch): identity, actor and time from its state;
    `said_at` from the messages `source_ids` names (the fact the event is about), else the add's."""
    sc = state.scope
    return HistoryEvent(memory_id, event, old, new, scope_key=sc.key, user_id=sc.user_id, agent_id=sc.agent_id,
                        run_id=sc.run_id, actor_id=state.actor_id, created_at=state.now,
                        said_at=conversation_time(state, source_ids))


def row_events(rows: Iterable[Any], event: str, *, actor_id: str | None, now: dt.datetime,
               new: str | None = None) -> list[HistoryEvent]:
    """Events for stored memories given as (id, text, user_id, agent_id, run_id, scope_key) rows."""
    return [HistoryEvent(r[0], event, r[1], new, user_id=r[2], agent_id=r[3], run_id=r[4], scope_key=r[5],
                         actor_id=actor_id, created_at=now) for r in rows]


def keeps_history(policy: str) -> bool:
    """Does this policy write history rows at all?"""
    return policy != "off"


def keeps_text(policy: str) -> bool:
    """Do history rows keep the memories' text under this policy?"""
    return policy == "full"


def history_rows(policy: str, events: Iterable[HistoryEvent], *, is_deleted: bool = False) -> Rows | None:
    """The `history` rows for `events` under `policy` (None when the policy writes none).
    `is_deleted=True` marks events of memories that are gone (delete, purge)."""
    if not keeps_history(policy):
        return None
    text = keeps_text(policy)
    evs = list(events)
    cols: dict[str, list[Any]] = {
        "id": [new_id() for _ in evs], "memory_id": [e.memory_id for e in evs], "event": [e.event for e in evs],
        "old_memory": [e.old_memory for e in evs] if text else [None] * len(evs),
        "new_memory": [e.new_memory for e in evs] if text else [None] * len(evs),
        "user_id": [e.user_id for e in evs], "agent_id": [e.agent_id for e in evs], "run_id": [e.run_id for e in evs],
        "scope_key": [e.scope_key for e in evs], "actor_id": [e.actor_id for e in evs],
        "role": [e.role for e in evs], "created_at": [e.created_at for e in evs],
        "said_at": [e.said_at for e in evs]}
    cols["is_deleted"] = [is_deleted] * len(evs)
    return Rows(HISTORY_SCHEMA, cols)


def history_table(policy: str, events: Iterable[HistoryEvent], *, is_deleted: bool = False) -> pa.Table | None:
    """`history_rows` as an Arrow table."""
    rows = history_rows(policy, events, is_deleted=is_deleted)
    return rows.arrow() if rows is not None else None
