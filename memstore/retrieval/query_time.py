"""The periods a query names ("on 8 May, 2023", "in July 2022", "in June", "in 2021") and the time
signal: how close a memory's time (valid_from, else created_at: when it was said) lies to them.

A question that names a date asks about what was said then; the memories stamped with that period
(or within days of it: people report an event a little after it happens) are the likely answers.
The signal is 1 inside a named period and halves every `half_life_days` outside it; with several
periods the nearest counts. A month named without a year ("in June") stands for that month of the
memory's own year, the year before and the year after (the nearest of the three counts). A query
that names no period gets time 0 and the weight 0 (like the slot signal), so the fused score's
denominator depends on the query only. sql/queries/fuse_scores.sql computes the same formula.

>>> p = query_periods("What did Maria donate on 3 June, 2023 and in July 2022?")
>>> [(str(a), str(b)) for a, b in p.dates()], p.months
([('2023-06-03T00:00:00', '2023-06-04T00:00:00'), ('2022-07-01T00:00:00', '2022-08-01T00:00:00')], ())
>>> query_periods("When did Melanie go camping in June?").months, bool(query_periods("May I ask what she did?"))
((6,), False)
>>> t = np.array(["2023-06-03T12:00", "2023-06-11T00:00", "2024-06-20", "2023-01-01"], "datetime64[s]")
>>> time_scores(t.astype(np.int64), query_periods("on June 3, 2023"), 7.0).round(3).tolist()
[1.0, 0.5, 0.0, 0.0]
>>> time_scores(t.astype(np.int64), query_periods("in June"), 7.0).round(3).tolist()
[1.0, 1.0, 1.0, 0.0]
"""
from __future__ import annotations

import calendar
import datetime as dt
import functools
import math
import re
from dataclasses import dataclass

import numpy as np

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DMY = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b", re.I)
_MDY = re.compile(rf"\b({_MON})\.?\s+{_DAY},?\s+(\d{{4}})\b", re.I)
_MY = re.compile(rf"\b({_MON})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_M = re.compile(r"\b(" + "|".join(m for m in calendar.month_name if m) + r")\b(?!\s*\d)")  # capitalised, full
_Y = re.compile(r"\b(19\d\d|20\d\d)\b")
_DAY_S = 86400

# Words that say when, not what: the time signal reads dates; as keyword terms they match the time
# phrases of unrelated facts ("What did John do last weekend?" lifted every fact told "last weekend").
TIME_WORDS = frozenset(
    [m.lower() for m in calendar.month_name if m] + [d.lower() for d in calendar.day_name]
    + "when recently recent lately currently ago yesterday today tonight tomorrow week weeks weekend weekends "
      "month months year years day days morning evening afternoon".split())


def is_time_word(word: str) -> bool:
    """A word that names a time rather than a topic (a month, a weekday, a year, "yesterday"...).

    >>> [w for w in "What did Maria do last weekend in May 2023 recently".split() if is_time_word(w)]
    ['weekend', 'May', '2023', 'recently']
    """
    w = word.lower()
    return w in TIME_WORDS or (len(w) == 4 and w[:2] in ("19", "20") and w.isdigit())      # a year, as _Y


@dataclass(frozen=True)
class QueryPeriods:
    spans: tuple[tuple[int, int], ...] = ()     # [start, end) in epoch seconds (UTC, naive like the store)
    months: tuple[int, ...] = ()                # months named without a year (1-12)

    def __bool__(self) -> bool:
        return bool(self.spans or self.months)

    def dates(self) -> list[tuple[np.datetime64, np.datetime64]]:
        return [(np.datetime64(a, "s"), np.datetime64(b, "s")) for a, b in self.spans]


def _epoch(d: dt.datetime) -> int:
    return int((d - dt.datetime(1970, 1, 1)).total_seconds())


def _month(y: int, m: int) -> tuple[int, int]:
    return _epoch(dt.datetime(y, m, 1)), _epoch(dt.datetime(y + (m == 12), m % 12 + 1, 1))


@functools.lru_cache(maxsize=2048)
def query_periods(query: str) -> QueryPeriods:
    """Dates (a day), months of a year, years and bare month names in the query, most specific
    first; text used by one form is not read again by a coarser one."""
    spans: list[tuple[int, int]] = []
    used: list[tuple[int, int]] = []
    free = lambda m: not any(a <= m.start() < b for a, b in used)  # noqa: E731
    for rx, order in ((_DMY, (3, 2, 1)), (_MDY, (3, 1, 2))):
        for m in rx.finditer(query):
            if not free(m):
                continue
            y, mon, d = (m.group(i) for i in order)
            try:
                day = dt.datetime(int(y), _MONTHS[mon.lower()], int(d))
            except ValueError:
                continue
            spans.append((_epoch(day), _epoch(day) + _DAY_S))
            used.append(m.span())
    for m in _MY.finditer(query):
        if free(m):
            spans.append(_month(int(m.group(2)), _MONTHS[m.group(1).lower()]))
            used.append(m.span())
    months = []
    for m in _M.finditer(query):
        if free(m) and query[:m.start()].strip():       # "May I ...": a month never opens the question
            months.append(_MONTHS[m.group(1).lower()])
            used.append(m.span())
    for m in _Y.finditer(query):
        if free(m):
            y = int(m.group(1))
            spans.append((_epoch(dt.datetime(y, 1, 1)), _epoch(dt.datetime(y + 1, 1, 1))))
            used.append(m.span())
    return QueryPeriods(spans=tuple(dict.fromkeys(spans)), months=tuple(dict.fromkeys(months)))


def time_scores(valid_at: np.ndarray, periods: QueryPeriods, half_life_days: float) -> np.ndarray:
    """Per memory (epoch seconds): exp(-ln 2 * days outside the nearest period / half_life_days)."""
    t = np.asarray(valid_at, np.int64)
    best = np.zeros(len(t))
    if not periods or not len(t):
        return best
    rate = math.log(2) / _DAY_S / float(half_life_days)

    def near(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        return np.exp(-rate * np.maximum(np.maximum(a - t, t - b), 0).astype(np.float64))

    for a, b in periods.spans:
        best = np.maximum(best, near(a, b))
    if periods.months:
        year = t.astype("datetime64[s]").astype("datetime64[Y]").astype(np.int64)   # years since 1970
        for mon in periods.months:
            for dy in (-1, 0, 1):
                start = (year + dy) * 12 + (mon - 1)                                   # months since 1970-01
                a = start.astype("datetime64[M]").astype("datetime64[s]").astype(np.int64)
                b = (start + 1).astype("datetime64[M]").astype("datetime64[s]").astype(np.int64)
                best = np.maximum(best, near(a, b))
    return best
