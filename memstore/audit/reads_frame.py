"""The audit of reads, read back: the rows of a scope or a token since a time, newest first
(what `memstore reads` prints and the dashboard's Reads page shows).

>>> parse_since("7d", now=dt.datetime(2026, 1, 8))
datetime.datetime(2026, 1, 1, 0, 0)
>>> parse_since("2025-12-24", now=dt.datetime(2026, 1, 8))
datetime.datetime(2025, 12, 24, 0, 0)
>>> parse_since("soon")
Traceback (most recent call last):
...
memstore.core.errors.TimeParseError: since='soon' is neither a duration nor a time — give e.g. 30m, 12h, 7d, 2w, or a date like 2026-01-31
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

import polars as pl

from memstore.core.errors import MemstoreError, TimeParseError
from memstore.core.timeutil import parse_time, utcnow
from memstore.store.sqlfiles import load_sql

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(value: Any, *, now: dt.datetime | None = None) -> dt.datetime | None:
    """A duration back from now ("30m", "12h", "7d", "2w") or a time; None stays None."""
    if value is None:
        return None
    text = str(value).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdw])", text)
    if m:
        now = now or utcnow()
        return now - dt.timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        return parse_time(text, "since")
    except MemstoreError:
        raise TimeParseError(f"since={text!r} is neither a duration nor a time",
                             hint="give e.g. 30m, 12h, 7d, 2w, or a date like 2026-01-31") from None


def recent_reads(memory: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                 token: str | None = None, since: Any = None, limit: int = 100) -> pl.DataFrame:
    """The reads of a scope (and/or a token) since `since`, newest first, through `memory.sql`
    (a Memory, or the client of a server: analyst API)."""
    params = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "token": token,
              "since": parse_since(since), "limit": int(limit)}
    return memory.sql(load_sql("queries/reads_recent"), params)
