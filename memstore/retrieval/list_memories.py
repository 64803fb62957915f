"""`get_all()`: a scope's memories, newest first, under the same visibility rule as search."""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from memstore.core.records import memory_record
from memstore.core.rules.validity import visibility_sql
from memstore.core.timeutil import utcnow
from memstore.retrieval.filters import compile_filters
from memstore.store.sqlfiles import load_sql

if TYPE_CHECKING:
    from memstore.store.database import Database


def list_memories(db: Database, filters: dict[str, Any], *, limit: int, include_superseded: bool = False,
                  show_expired: bool = False, as_of: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Memories matching checked `filters` (with a scope), newest first, as mem0-shaped records."""
    where, params, _ = compile_filters(filters)
    vis = visibility_sql(include_superseded=include_superseded, show_expired=show_expired, as_of=as_of is not None)
    params["limit"] = limit
    if "$now" in vis:  # DuckDB rejects unused named parameters (e.g. include_superseded + show_expired)
        params["now"] = utcnow()
    if as_of is not None:
        params["as_of"] = as_of
    sql = load_sql("queries/get_all").replace("/*WHERE*/", f"({where}) AND {vis}")
    return [memory_record(r) for r in db.dicts("get_all", params, sql=sql)]
