"""Relative time in a fact, resolved against the message's time (offline, regular expressions).

`when_stated` gives the day an event happened ("last week", "two days ago", "in March", "on June
29", "since 2018"); `expires` gives the end of a transient state's time phrase ("today", "tonight",
"this week", "this weekend", "until Friday", "right now").

>>> import datetime as dt
>>> at = dt.datetime(2024, 6, 12, 10)           # a Wednesday
>>> when_stated("I moved to Seattle last week", at)
datetime.datetime(2024, 6, 5, 10, 0)
>>> when_stated("I married James on June 29", at), when_stated("I joined Shopify in January", at)
(datetime.datetime(2023, 6, 29, 0, 0), datetime.datetime(2024, 1, 1, 0, 0))
>>> expires("I'm in Lisbon this week", at), expires("sick today", at)
(datetime.datetime(2024, 6, 17, 0, 0), datetime.datetime(2024, 6, 13, 0, 0))
>>> expires("I live in Lisbon", at) is None
True
"""
from __future__ import annotations

import datetime as dt
import re

__all__ = ["SHORT_SCOPE", "expires", "when_stated"]

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
        "eight": 8, "nine": 9, "ten": 10, "a few": 3, "a couple of": 2, "couple of": 2, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTH_RX = "|".join(_MONTHS)
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several)\s+"
                  r"(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_ON_DATE = re.compile(rf"\bon\s+({_MONTH_RX})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.IGNORECASE)
_IN_MONTH = re.compile(rf"\b(?:in|since|last)\s+({_MONTH_RX})\b", re.IGNORECASE)
_IN_YEAR = re.compile(r"\b(?:in|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_SIMPLE = {"yesterday": 1, "last night": 1, "last week": 7, "last month": 30, "last year": 365,
           "the other day": 3, "a while ago": 60, "recently": 0}

# Time phrases of a state that lasts a short while (what makes "I'm in Lisbon" transient).
SHORT_SCOPE = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening|week|weekend)|right now|"
                         r"at the moment|for (?:now|the (?:day|week|weekend))|until (?:\w+day|tomorrow|"
                         rf"(?:next|the end of the) \w+|{_MONTH_RX})|this week's)\b", re.IGNORECASE)


def _midnight(d: dt.datetime) -> dt.datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def when_stated(text: str, at: dt.datetime | None) -> dt.datetime | None:
    """The moment a past event in `text` happened, or None when it names no time (or `at` is None)."""
    if at is None:
        return None
    low = text.lower()
    m = _AGO.search(low)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUM[m.group(1)]
        return at - dt.timedelta(days=n * _UNIT_DAYS[m.group(2)])
    m = _ON_DATE.search(low)
    if m:
        month, day = _MONTHS.index(m.group(1)) + 1, int(m.group(2))
        try:
            d = dt.datetime(at.year, month, day)
        except ValueError:
            return None
        return d if d <= at else d.replace(year=at.year - 1)
    m = re.search(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", low)
    if m:
        return _midnight(at - dt.timedelta(days=(at.weekday() - _DAYS.index(m.group(1))) % 7 or 7))
    if "last weekend" in low:
        return _midnight(at - dt.timedelta(days=(at.weekday() - 5) % 7 or 7))
    for phrase, days in _SIMPLE.items():
        if re.search(rf"\b{phrase}\b", low):
            return at - dt.timedelta(days=days) if days else None
    m = _IN_MONTH.search(low)
    if m:
        month = _MONTHS.index(m.group(1)) + 1
        year = at.year if month <= at.month else at.year - 1
        return dt.datetime(year, month, 1)
    m = _IN_YEAR.search(low)
    if m and int(m.group(1)) <= at.year:
        return dt.datetime(int(m.group(1)), 1, 1)
    return None


def expires(text: str, at: dt.datetime | None) -> dt.datetime | None:
    """When a transient state stated at `at` ends, from its time phrase; None without one."""
    if at is None:
        return None
    low = text.lower()
    day0 = _midnight(at)
    if re.search(r"\b(?:this week|this weekend|for the week|for the weekend)\b", low):
        return day0 + dt.timedelta(days=7 - at.weekday())             # next Monday
    m = re.search(r"\buntil (\w+day)\b", low)
    if m and m.group(1) in _DAYS:
        ahead = (_DAYS.index(m.group(1)) - at.weekday()) % 7 or 7
        return day0 + dt.timedelta(days=ahead + 1)
    m = re.search(rf"\buntil ({_MONTH_RX})\b", low)
    if m:
        month = _MONTHS.index(m.group(1)) + 1
        return dt.datetime(at.year if month >= at.month else at.year + 1, month, 1)
    if re.search(r"\buntil (?:the end of the|next) month\b", low):
        return (day0.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    if re.search(r"\buntil (?:the end of the|next) week\b", low):
        return day0 + dt.timedelta(days=7 - at.weekday())
    if re.search(r"\btonight\b", low):
        return day0 + dt.timedelta(days=1, hours=8)
    if re.search(r"\buntil tomorrow\b", low):
        return day0 + dt.timedelta(days=2)
    if SHORT_SCOPE.search(low):                                      # today, right now, at the moment
        return day0 + dt.timedelta(days=1)
    return None
