"""Compile mem0-style filters to SQL through sqlglot; every user value is a bound parameter.

>>> sql, params, scope = compile_filters({"user_id": "alice", "topic": {"in": ["food", "travel"]}})
>>> sql
'm.user_id = $f0 AND LIST_CONTAINS($f2, JSON_EXTRACT_STRING(m.metadata, $f1))'
>>> params
{'f0': 'alice', 'f1': 'topic', 'f2': ['food', 'travel']}
>>> compile_filters({"topic": "food"})
Traceback (most recent call last):
...
memstore.core.errors.FilterError: filters need at least one identity key at the top level — add {"user_id": ...} (or agent_id / run_id): search never runs across users

"@" keys read the memory's own columns: `@id`, `@memory` (its text), `@created_at`, `@updated_at`,
`@valid_from` (times: ISO-8601 text, a date or epoch seconds, compared in UTC):

>>> compile_filters({"user_id": "a", "@created_at": {"gte": "2025-01-01T00:00:00Z"}, "@id": {"in": ["m1"]}})[:2]
('m.user_id = $f0 AND m.created_at >= $f1 AND LIST_CONTAINS($f2, m.id)', {'f0': 'a', 'f1': datetime.datetime(2025, 1, 1, 0, 0), 'f2': ['m1']})
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sqlglot import exp

from memstore.core.errors import FilterError
from memstore.core.identity import IDENTITY_KEYS

OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
COLUMN_KEYS = IDENTITY_KEYS + ("actor_id", "role", "attributed_to")
# "@name" keys read the memory's own columns (never metadata): its id, its text, and when it was
# written / last changed / became true (values: ISO-8601 text, a date or epoch seconds).
MEMORY_COLUMNS = {"@id": "id", "@memory": "memory"}
TIME_COLUMNS = {"@created_at": "created_at", "@updated_at": "updated_at", "@valid_from": "valid_from"}


# "$.a.b", "$.a[0]", '$."a b"' (a quoted key: no quote, backslash or control character; what DuckDB binds)
JSON_PATH = re.compile(r'\$(\.([A-Za-z0-9_-]+|"[^"\x00-\x1f\\]+")|\[[0-9]{1,9}\])+')
MAX_FILTER_DEPTH = 32          # AND / OR / NOT levels (a deeper filter hit Python's recursion limit)
MAX_FILTER_CONDITIONS = 1000


class _Compiler:
    conditions = 0

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.params: dict[str, Any] = {}

    def param(self, value: Any) -> exp.Expression:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return exp.Placeholder(this=name)

    def field(self, key: str, numeric: bool) -> exp.Expression:
        if key in MEMORY_COLUMNS or key in TIME_COLUMNS:
            return exp.column(MEMORY_COLUMNS.get(key) or TIME_COLUMNS[key], table=self.alias)
        if key in COLUMN_KEYS:
            col = exp.column(key, table=self.alias)  # VARCHAR: a number compares after TRY_CAST, as metadata does
            return exp.TryCast(this=col, to=exp.DataType.build("DOUBLE")) if numeric else col
        if not isinstance(key, str) or not key:
            raise FilterError(f"filter key {key!r} is not a non-empty string")
        if key.startswith("$") and not JSON_PATH.fullmatch(key):      # DuckDB would fail to bind it
            raise FilterError(f"filter key {key!r} starts with '$' but is not a JSON path",
                              hint='a metadata key, or a JSON path such as "$.a.b", "$.a[0]" or \'$."a b"\'', key=key)
        value = exp.func("json_extract_string", exp.column("metadata", table=self.alias), self.param(key))
        return exp.TryCast(this=value, to=exp.DataType.build("DOUBLE")) if numeric else value

    def condition(self, key: str, spec: Any) -> exp.Expression:
        if not isinstance(spec, dict):
            spec = {"eq": spec}
        if not spec:
            raise FilterError(f"filter on {key!r} has no operator", hint=f"use one of {', '.join(OPERATORS)}")
        parts = []
        for op, value in spec.items():
            if op not in OPERATORS:
                raise FilterError(f"unknown filter operator {op!r} on {key!r}",
                                  hint=f"use one of {', '.join(OPERATORS)}", key=key, operator=op)
            if key in TIME_COLUMNS:
                value = _time_value(key, op, value)
            numeric = op in ("gt", "gte", "lt", "lte") and isinstance(value, (int, float)) and not isinstance(value, bool)
            col = self.field(key, numeric)
            if isinstance(value, bool):
                value = "true" if value else "false"
            if op in ("in", "nin"):
                if not isinstance(value, (list, tuple)):
                    raise FilterError(f"operator {op!r} on {key!r} needs a list, got {type(value).__name__}")
                bad = [v for v in value if v is not None and not isinstance(v, (str, int, float))]
                if bad:
                    raise FilterError(f"operator {op!r} on {key!r} takes strings and numbers, got {bad[0]!r}")
                items = [v if isinstance(v, str) else _scalar(v) for v in value if v is not None]
                cond: exp.Expression = exp.func("list_contains", self.param(items), col)
                if op == "nin" or None in value:
                    cond = exp.func("coalesce", cond, exp.false())
                if None in value:  # None in the list means "the key is missing", as eq None does
                    cond = exp.paren(exp.or_(cond, exp.Is(this=col, expression=exp.null())))
                parts.append(exp.Not(this=cond) if op == "nin" else cond)
                continue
            if isinstance(value, dt.datetime):      # a time column's bound value
                cls = {"eq": exp.EQ, "ne": exp.NullSafeNEQ, "gt": exp.GT, "gte": exp.GTE, "lt": exp.LT, "lte": exp.LTE}
                parts.append(cls[op](this=col, expression=self.param(value)))
                continue
            if value is not None and not isinstance(value, (str, int, float)):
                raise FilterError(f"filter value for {key!r} must be a string or number, got {type(value).__name__}")
            if op == "eq" and value is None:  # IS NULL binds no parameter (an unused one is a DuckDB error)
                parts.append(exp.Is(this=col, expression=exp.null()))
                continue
            p = self.param(value if numeric or value is None or isinstance(value, str) else _scalar(value))
            if op == "eq":
                parts.append(exp.EQ(this=col, expression=p))
            elif op == "ne":
                parts.append(exp.NullSafeNEQ(this=col, expression=p))
            elif op in ("gt", "gte", "lt", "lte"):
                cls = {"gt": exp.GT, "gte": exp.GTE, "lt": exp.LT, "lte": exp.LTE}[op]
                parts.append(cls(this=col, expression=p))
            elif op == "contains":
                parts.append(exp.func("contains", col, p))
            else:
                parts.append(exp.func("contains", exp.Lower(this=col), exp.Lower(this=p)))
        return exp.and_(*parts) if len(parts) > 1 else parts[0]

    def tree(self, filters: Any, depth: int = 0) -> exp.Expression | None:
        if depth > MAX_FILTER_DEPTH:
            raise FilterError(f"filters nest deeper than {MAX_FILTER_DEPTH} levels of AND / OR / NOT",
                              hint="flatten the filter: AND / OR take a list of any length", depth=depth)
        if not isinstance(filters, dict):
            raise FilterError(f"filters must be a dict, got {type(filters).__name__}")
        self.conditions += len(filters)
        if self.conditions > MAX_FILTER_CONDITIONS:
            raise FilterError(f"filters hold more than {MAX_FILTER_CONDITIONS} conditions",
                              hint="use a list operator ({'in': [...]}) instead of many equalities")
        parts = []
        for key, spec in filters.items():
            if key in ("AND", "OR"):
                if not isinstance(spec, list) or not spec:
                    raise FilterError(f"{key} needs a non-empty list of filter dicts")
                subs = [self.tree(s, depth + 1) for s in spec]
                subs = [s for s in subs if s is not None]
                if subs:
                    parts.append(exp.and_(*subs) if key == "AND" else exp.Paren(this=exp.or_(*subs)))
            elif key == "NOT":
                sub = self.tree(spec, depth + 1)
                if sub is not None:
                    parts.append(exp.Not(this=exp.func("coalesce", exp.Paren(this=sub), exp.false())))
            else:
                parts.append(self.condition(key, spec))
        return exp.and_(*parts) if parts else None


def _time_value(key: str, op: str, value: Any) -> Any:
    """The datetime a time column is compared with (naive UTC, as stored); None stays None."""
    from memstore.core.errors import TimeParseError
    from memstore.core.timeutil import parse_time

    if op not in ("eq", "ne", "gt", "gte", "lt", "lte"):
        raise FilterError(f"operator {op!r} does not apply to the time {key!r}",
                          hint="use eq, ne, gt, gte, lt or lte with an ISO-8601 time, a date or epoch seconds", key=key)
    if value is None:
        return None
    try:
        return parse_time(value, key)
    except TimeParseError as exc:
        raise FilterError(f"filter on {key!r}: {exc.args[0]}", key=key) from None


def _scalar(v: Any) -> str:
    """A non-string filter value as JSON text, as json_extract_string returns it (True → 'true').

    >>> [_scalar(v) for v in (True, 3, 2.5)]
    ['true', '3', '2.5']
    """
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def trim_identity(filters: Any) -> Any:
    """Top-level identity values in the canonical form add() stores (core/scope_rule.py), so
    " alice " reads what it wrote.

    >>> trim_identity({"user_id": " alice ", "agent_id": {"eq": "bot "}, "topic": " x "})
    {'user_id': 'alice', 'agent_id': {'eq': 'bot'}, 'topic': ' x '}
    """
    from memstore.core.scope_rule import canonical_filters

    return canonical_filters(filters)


def scope_of(filters: dict[str, Any] | None) -> dict[str, str]:
    """Identity keys given as plain equality at the top level: the tenant boundary."""
    out = {}
    for k in IDENTITY_KEYS:
        v = (filters or {}).get(k)
        if isinstance(v, dict) and set(v) == {"eq"}:
            v = v["eq"]
        if isinstance(v, str) and v:
            out[k] = v
    return out


def check_filters(filters: Any, name: str = "filters") -> dict[str, Any]:
    """Filters must be a dict (or None for none).

    >>> check_filters(None), check_filters({"user_id": "a"})
    ({}, {'user_id': 'a'})
    >>> check_filters("user_id=a")
    Traceback (most recent call last):
    ...
    memstore.core.errors.FilterError: filters must be a dict, got str — e.g. {"user_id": "alice", "category": {"in": ["a", "b"]}}
    """
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise FilterError(f"{name} must be a dict, got {type(filters).__name__}",
                          hint='e.g. {"user_id": "alice", "category": {"in": ["a", "b"]}}')
    return filters


def compile_filters(filters: dict[str, Any] | None, *, alias: str = "m",
                    require_scope: bool = True) -> tuple[str, dict[str, Any], dict[str, str]]:
    """Filters → (SQL boolean expression, parameters, scope). The scope (top-level identity
    equalities) is always ANDed, so OR/NOT branches can never widen it to another user."""
    filters = trim_identity(check_filters(filters))
    scope = scope_of(filters)
    if require_scope and not scope:
        raise FilterError("filters need at least one identity key at the top level",
                          hint='add {"user_id": ...} (or agent_id / run_id): search never runs across users')
    c = _Compiler(alias)
    tree = c.tree(filters)
    sql = tree.sql(dialect="duckdb") if tree is not None else "TRUE"
    return sql, c.params, scope


def posting_scope_sql(scope: dict[str, str], alias: str = "p") -> tuple[str, dict[str, Any]]:
    """Identity equalities for a postings table (which carries user_id/agent_id/run_id).

    >>> posting_scope_sql({"user_id": "alice"})
    ('p.user_id = $ps_user_id', {'ps_user_id': 'alice'})
    """
    parts, params = [], {}
    for key in IDENTITY_KEYS:
        if key in scope:
            parts.append(exp.EQ(this=exp.column(key, table=alias), expression=exp.Placeholder(this=f"ps_{key}")))
            params[f"ps_{key}"] = scope[key]
    return (exp.and_(*parts).sql(dialect="duckdb") if parts else "TRUE"), params
