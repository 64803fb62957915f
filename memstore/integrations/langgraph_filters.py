"""LangGraph store filters (`store.search(ns, filter={...})`) on memstore: what SQL can decide is
pushed down as memstore filters on `metadata.value`; every condition is then checked exactly in
Python with LangGraph's semantics (a list value matches an equal list, `$gt` compares numbers, NaN
matches nothing), so no pushdown shortcut can change an answer.

>>> lg = LangGraphFilter({"topic": "food", "stars": {"$gte": 4}, "tags": ["draft"], "user.level": "x"})
>>> lg.pushdown
{'$.value."topic"': 'food', '$.value."stars"': {'gte': 4.0}, '$.value."user"."level"': 'x'}
>>> lg.exact, lg.matches({"topic": "food", "stars": 5, "tags": ["draft"], "user": {"level": "x"}})
(False, True)
>>> LangGraphFilter({"a') OR 1=1 --": 1})
Traceback (most recent call last):
...
memstore.core.errors.FilterError: Invalid filter key "a') OR 1=1 --" — a filter key is a field name or a dotted path of field names (e.g. "user.access-level"): no quotes, brackets, parentheses, '$', '=', ';', backslashes or control characters
"""
from __future__ import annotations

import math
import re
from typing import Any

from memstore.core.errors import FilterError

OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_BAD_KEY = re.compile(r"['\"`\\$()\[\]=;\x00-\x1f\x7f]")
_PUSHABLE_NUMBER = 2.0 ** 53        # beyond it a float no longer holds every integer exactly


def check_filter_key(key: Any) -> list[str]:
    """The path parts of a filter key ("user.access-level" -> ["user", "access-level"])."""
    parts = key.split(".") if isinstance(key, str) else []
    if not parts or any(not p.strip() for p in parts) or _BAD_KEY.search(key):
        raise FilterError(f"Invalid filter key {key!r}",
                          hint="a filter key is a field name or a dotted path of field names (e.g. "
                               "\"user.access-level\"): no quotes, brackets, parentheses, '$', '=', ';', "
                               "backslashes or control characters", key=str(key))
    return parts


def _json_path(parts: list[str]) -> str:
    return "$.value" + "".join(f'."{p}"' for p in parts)


def _number(v: Any) -> float | None:
    """A finite number SQL can compare exactly, else None (bools are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v) if not isinstance(v, int) or abs(v) < 2 ** 1023 else math.copysign(math.inf, v)
    return f if math.isfinite(f) and abs(f) < _PUSHABLE_NUMBER else None


class LangGraphFilter:
    """One search's `filter`: `.pushdown` (memstore filters), `.exact` (True when the pushdown
    alone decides) and `.matches(value)` (the exact check)."""

    def __init__(self, flt: dict[str, Any] | None) -> None:
        if flt is not None and not isinstance(flt, dict):
            raise FilterError(f"filter must be a dict, got {type(flt).__name__}", hint='e.g. filter={"topic": "food"}')
        self.conditions: list[tuple[list[str], Any]] = []
        self.pushdown: dict[str, Any] = {}
        self.exact = True
        for key, spec in (flt or {}).items():
            parts = check_filter_key(key)
            if isinstance(spec, dict) and any(isinstance(k, str) and k.startswith("$") for k in spec):
                bad = sorted(str(k) for k in spec if k not in OPERATORS)
                if bad:
                    raise FilterError(f"unknown filter operator(s) {bad} on {key!r}",
                                      hint=f"use {', '.join(OPERATORS)}", key=key)
            self.conditions.append((parts, spec))
            pushed = self._push(spec)
            if pushed is None:
                self.exact = False
            else:
                self.pushdown[_json_path(parts)] = pushed

    def _push(self, spec: Any) -> Any:
        """The memstore filter for one condition when SQL can decide it exactly, else None."""
        if isinstance(spec, (str, bool)):
            return spec
        if isinstance(spec, dict) and spec and all(k in ("$gt", "$gte", "$lt", "$lte") for k in spec):
            out = {OPERATORS[k]: _number(v) for k, v in spec.items()}
            return out if all(v is not None for v in out.values()) else None
        return None

    def matches(self, value: Any) -> bool:
        """Whether an item's value satisfies every condition (LangGraph's semantics)."""
        for parts, spec in self.conditions:
            current = value
            for p in parts:
                current = current.get(p) if isinstance(current, dict) else None
            if not _compare(current, spec):
                return False
        return True


def _compare(item: Any, spec: Any) -> bool:
    if isinstance(spec, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in spec):
            return all(_apply(item, op, v) for op, v in spec.items())
        return isinstance(item, dict) and all(_compare(item.get(k), v) for k, v in spec.items())
    if isinstance(spec, (list, tuple)):
        return isinstance(item, (list, tuple)) and len(item) == len(spec) and \
            all(_compare(i, s) for i, s in zip(item, spec))
    return _same(item, spec)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: True is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _apply(item: Any, op: str, value: Any) -> bool:
    if op == "$eq":
        return _compare(item, value)
    if op == "$ne":
        return not _compare(item, value)
    if isinstance(item, bool) or isinstance(value, bool):
        return False
    try:
        a, b = float(item), float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
