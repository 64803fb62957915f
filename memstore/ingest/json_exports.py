"""What the ChatGPT and Claude readers share: stream an export's conversations one at a time
through a per-format parser, report replaced invalid UTF-8 once per file, and read timestamps
leniently (an unreadable time is missing, not fatal).

>>> lenient_time("2024-01-08T10:00:00Z", "created_at").isoformat()
'2024-01-08T10:00:00'
>>> lenient_time("yesterday-ish", "created_at") is None
True
"""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator
from typing import Any

from memstore.core.timeutil import TimeParseError, parse_time
from memstore.ingest.jsonstream import iter_items
from memstore.ingest.sources import open_bytes
from memstore.ingest.types import Problem, SourceConversation

Parser = Callable[..., "SourceConversation | None"]


def stream_conversations(path: str | os.PathLike, problems: list[Problem], parse: Parser,
                         **options: Any) -> Iterator[SourceConversation]:
    """Yield `parse(raw, file, problems, index=n, repaired=..., **options)` for each top-level item
    of the JSON array in `path` (the file is streamed, a .zip member included)."""
    file = os.fspath(path)
    with open_bytes(file) as stream:
        for n, raw in enumerate(iter_items(stream, file, what="conversation", problems=problems, **_limits(options))):
            conv = parse(raw, file, problems, index=n, repaired=stream.bad > 0, **options)
            if conv is not None:
                yield conv
        if stream.bad:
            problems.append(Problem(file, f"{stream.bad} invalid UTF-8 byte sequence(s) replaced with U+FFFD "
                                          f"(first near byte {stream.first_bad_at})", severity="warning"))


def _limits(options: dict[str, Any]) -> dict[str, int]:
    """The reader limits among the options (popped: the per-format parsers do not take them)."""
    return {k: options.pop(k) for k in ("max_depth", "max_item_bytes") if k in options}


def lenient_time(value: Any, field: str) -> dt.datetime | None:
    """A timestamp from an export (epoch seconds or ISO 8601); None when absent or unreadable."""
    try:
        return parse_time(value, field) if value not in (None, "") else None
    except (TimeParseError, ValueError, OverflowError, OSError):
        return None
