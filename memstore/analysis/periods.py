"""Time windows over frames: "what happened between these dates" and "what was true as of a date",
shared by the CLI (`memstore list/history/timeline --since --until --as-of`) and the dashboard.

Two clocks are kept apart, and every function says which one it reads:

- conversation time: when a thing was said (`valid_from` of a fact, `said_at` of a history event
  or an extraction run, `created_at` of a message);
- stored time: when the row was written (`created_at` of memories, history and runs).

A bare date as `until` means the whole of that day; as `as_of`, the end of that day.

>>> import datetime as dt
>>> period_bounds("2024-05-01", "2024-05-31")
(datetime.datetime(2024, 5, 1, 0, 0), datetime.datetime(2024, 6, 1, 0, 0))
>>> df = pl.DataFrame({"t": [dt.datetime(2024, 4, 30, 23), dt.datetime(2024, 5, 31, 22), dt.datetime(2024, 6, 1)]})
>>> in_period(df, "t", "2024-05-01", "2024-05-31")["t"].dt.day().to_list()
[31]
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from memstore.core.timeutil import parse_time

Bound = Any      # a date, a datetime, an ISO string, or None (open)


def _is_day(value: Bound) -> bool:
    """Does the bound name a whole day (a date, or a string without a time of day)?"""
    if isinstance(value, dt.datetime):
        return False
    if isinstance(value, dt.date):
        return True
    return isinstance(value, str) and len(value.strip()) <= 10


def period_bounds(since: Bound = None, until: Bound = None) -> tuple[dt.datetime | None, dt.datetime | None]:
    """[start, end) of a period: `since` inclusive, `until` inclusive of its whole day when it is a
    date. Raises TimeParseError (what, and how to write it) on an unreadable bound."""
    start = parse_time(since, "since") if since not in (None, "") else None
    end = parse_time(until, "until") if until not in (None, "") else None
    if end is not None and _is_day(until):
        end += dt.timedelta(days=1)
    return start, end


def as_of_time(as_of: Bound) -> dt.datetime:
    """The moment `as_of` names: a bare date means the end of that day (what was true that day).

    >>> as_of_time("2024-05-06")
    datetime.datetime(2024, 5, 6, 23, 59, 59, 999999)
    """
    t = parse_time(as_of, "as_of")
    return t + dt.timedelta(days=1, microseconds=-1) if _is_day(as_of) else t


def in_period(df: pl.DataFrame, column: str, since: Bound = None, until: Bound = None) -> pl.DataFrame:
    """Rows whose `column` falls in the period (rows with no time in `column` are dropped when a
    bound is given)."""
    start, end = period_bounds(since, until)
    if start is not None:
        df = df.filter(pl.col(column) >= start)
    if end is not None:
        df = df.filter(pl.col(column) < end)
    return df


def as_of(timeline: pl.DataFrame, when: Bound) -> pl.DataFrame:
    """A timeline (frame of the `timeline` view) as it stood at `when`, in conversation time: facts
    said by then, each with the status it had then (superseded only if replaced by then, expired
    only if its expiry had passed), and its interval cut at `when` (`valid_to` empty if still open
    then). The same rule as `get_all(as_of=...)` / `search(as_of=...)`: current at `when` means
    valid_from <= when < invalidated_at and not yet expired.

    >>> t = lambda d: dt.datetime(2024, 1, d)
    >>> tl = pl.DataFrame({"id": ["a", "b"], "valid_from": [t(1), t(10)], "valid_to": [t(10), None],
    ...                    "invalidated_at": [t(10), None], "expiration_date": [None, None],
    ...                    "status": ["superseded", "current"], "superseded_by": ["b", None]})
    >>> as_of(tl, "2024-01-05").select("id", "status", "valid_to", "superseded_by").rows()
    [('a', 'current', None, None)]
    >>> as_of(tl, "2024-01-20")["status"].to_list()
    ['superseded', 'current']
    """
    t = as_of_time(when)
    out = timeline.filter(pl.col("valid_from").is_null() | (pl.col("valid_from") <= t))
    replaced = pl.col("invalidated_at").is_not_null() & (pl.col("invalidated_at") <= t)
    expired = pl.col("expiration_date").is_not_null() & (pl.col("expiration_date") <= t)
    cols = [pl.when(replaced).then(pl.lit("superseded")).when(expired).then(pl.lit("expired"))
            .otherwise(pl.lit("current")).alias("status"),
            pl.when(pl.col("valid_to") <= t).then(pl.col("valid_to")).otherwise(None).alias("valid_to")]
    cols += [pl.when(replaced).then(pl.col(c)).otherwise(None).alias(c)
             for c in ("superseded_by", "superseded_by_memory") if c in out.columns]
    return out.with_columns(cols)
