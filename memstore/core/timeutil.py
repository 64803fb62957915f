"""Time parsing: all times are stored as naive UTC timestamps.

>>> parse_time("2023-05-10T14:00")
datetime.datetime(2023, 5, 10, 14, 0)
>>> parse_time("1:56 pm on 8 May, 2023")
datetime.datetime(2023, 5, 8, 13, 56)
>>> parse_time(1700000000000)
Traceback (most recent call last):
...
memstore.core.errors.TimeParseError: cannot read timestamp 1700000000000 as epoch seconds — it looks like milliseconds: divide by 1000
"""
from __future__ import annotations

import datetime as dt

from memstore.core.errors import (
    TimeParseError,
)

_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def utcnow() -> dt.datetime:
    """Now, as a naive UTC timestamp (how every time is stored): the one spelling of it."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def parse_time(value: object, what: str = "timestamp") -> dt.datetime:
    """datetime, date, epoch seconds or an ISO-8601 / LoCoMo-style string → naive UTC datetime."""
    if isinstance(value, dt.datetime):
        if not value.tzinfo:
            return value
        try:
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        except OverflowError:
            raise TimeParseError(f"cannot read {what} {value!r}: in UTC it falls outside years 1-9999",
                                 hint="use a time within years 1-9999") from None
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return dt.datetime.fromtimestamp(float(value), dt.timezone.utc).replace(tzinfo=None)
        except (ValueError, OverflowError, OSError):
            hint = ("it looks like milliseconds: divide by 1000" if abs(value) > 1e11 else
                    "epoch seconds must be a finite number within years 1-9999")
            raise TimeParseError(f"cannot read {what} {value!r} as epoch seconds", hint=hint) from None
    if isinstance(value, str):
        s = value.strip()
        try:
            return parse_time(dt.datetime.fromisoformat(s.replace("Z", "+00:00")), what)
        except ValueError:
            pass
        except OverflowError:     # "0001-01-01T00:00+01:00": in UTC it falls before year 1
            raise TimeParseError(f"cannot read {what} {value!r}: in UTC it falls outside years 1-9999",
                                 hint="use a time within years 1-9999") from None
        for fmt in _FORMATS:
            try:
                return dt.datetime.strptime(s, fmt)
            except ValueError:
                continue
    raise TimeParseError(f"cannot read {what} {value!r}", hint="use ISO-8601, e.g. 2023-05-10T14:00")
