"""The one rule that closes a validity interval when a newer fact replaces an older one.

Two kinds of closure, both at the moment `at` the new fact became valid:

- **supersede**: a still-current memory ends at `at` — but never before it began (superseding a
  fact newer than its replacement, e.g. out-of-order input, leaves an empty interval);
- **narrow**: a late fact lands inside the closed interval of an older fact on its slot; that
  interval now ends where the late fact begins.

`closed_at` is the rule; `sql/queries/supersede_memories.sql` and `sql/queries/narrow_validity.sql`
apply it to stored rows, and the batched writer applies `closed_at` to the rows it has not written
yet. tests/test_rules_golden.py runs the cases of tests/golden/rules/supersession.jsonl through
both and through `Memory.add`.

>>> import datetime as dt
>>> d = lambda day: dt.datetime(2026, 1, day)
>>> closed_at("supersede", valid_from=d(1), invalidated_at=None, at=d(5))
datetime.datetime(2026, 1, 5, 0, 0)
>>> closed_at("supersede", valid_from=d(9), invalidated_at=None, at=d(5))     # never before it began
datetime.datetime(2026, 1, 9, 0, 0)
>>> closed_at("narrow", valid_from=d(1), invalidated_at=d(9), at=d(5)), closed_at("narrow", d(1), d(3), d(5))
(datetime.datetime(2026, 1, 5, 0, 0), None)
"""
from __future__ import annotations

import datetime as dt
from typing import Literal

Closure = Literal["supersede", "narrow"]


def closed_at(kind: Closure, valid_from: dt.datetime | None, invalidated_at: dt.datetime | None,
              at: dt.datetime) -> dt.datetime | None:
    """The memory's new `invalidated_at` when a fact valid from `at` closes it by `kind`, or None
    when the closure does not apply to it (it stays as it is)."""
    if kind == "supersede":
        return max(at, valid_from or at) if invalidated_at is None else None
    if kind == "narrow":
        return at if invalidated_at is not None and invalidated_at > at else None
    raise ValueError(f"unknown closure {kind!r}: 'supersede' or 'narrow'")
