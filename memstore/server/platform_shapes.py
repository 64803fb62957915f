"""The mem0 platform's shapes, read and written: its filter language turned into memstore's filters,
and memstore's records answered as the platform's memory, history and entity objects
(memstore/server/platform_routes.py serves them).

The platform's filters (docs.mem0.ai, "Memory Filters v2") become memstore filters
(memstore/retrieval/filters.py):

- `AND` / `OR` lists and `NOT` (a filter, or a list meaning "none of them"); a root without one is
  an AND of its keys;
- `user_id` / `agent_id` / `run_id` equalities of the root AND become the search's scope;
- `"*"` matches any non-null value; operators `eq ne in gt gte lt lte contains icontains` as they are;
- `created_at`, `updated_at` (time operators), `timestamp` (when the conversation happened:
  memstore's valid_from), `keywords` (the memory's text: contains / icontains), `memory_ids` (a list
  of ids), `metadata` ({key: value} pairs) and `app_id` / `categories` (metadata keys of those names);
  any other key is a metadata key, as in mem0's open-source filters.

>>> translate_filters({"AND": [{"user_id": "alice"}, {"run_id": "*"}, {"created_at": {"gte": "2025-01-01"}}]})
{'user_id': 'alice', 'AND': [{'NOT': {'run_id': None}}, {'@created_at': {'gte': '2025-01-01'}}]}
>>> translate_filters({"OR": [{"categories": {"contains": "food"}}, {"metadata": {"topic": "travel"}}], "user_id": "bo"})
{'user_id': 'bo', 'AND': [{'OR': [{'categories': {'contains': 'food'}}, {'topic': 'travel'}]}]}
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from memstore.core.errors import FilterError
from memstore.core.identity import IDENTITY_KEYS

# platform field -> memstore filter key ("@" keys are the memory's own columns)
FIELDS = {"created_at": "@created_at", "updated_at": "@updated_at", "timestamp": "@valid_from",
          "keywords": "@memory", "memory_ids": "@id"}
WILDCARD = "*"
MAX_NESTING = 32


def translate_filters(filters: Any) -> dict[str, Any]:
    """The memstore filter for a platform filter (see the module docstring); {} for none."""
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be an object, got {type(filters).__name__}",
                          hint='e.g. {"AND": [{"user_id": "alice"}, {"created_at": {"gte": "2025-01-01"}}]}')
    top: dict[str, Any] = {}
    rest = []
    for cond in _conditions(filters, 0):
        (key, value), = cond.items() if len(cond) == 1 else ((None, None),)
        if key in IDENTITY_KEYS and isinstance(value, str) and key not in top:
            top[key] = value
        else:
            rest.append(cond)
    if rest:
        top["AND"] = rest
    return top


def _conditions(filters: dict[str, Any], depth: int) -> list[dict[str, Any]]:
    """The conditions a platform filter ANDs together, each a memstore filter."""
    if depth > MAX_NESTING:
        raise FilterError(f"filters nest deeper than {MAX_NESTING} levels", hint="flatten the filter")
    out: list[dict[str, Any]] = []
    for key, value in filters.items():
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
                raise FilterError(f"{key} needs a non-empty list of filter objects", key=key)
            if key == "AND":
                for sub in value:
                    out += _conditions(sub, depth + 1)
            else:
                out.append({"OR": [_one(sub, depth + 1) for sub in value]})
        elif key == "NOT":
            subs = value if isinstance(value, list) else [value]
            if not subs or not all(isinstance(v, dict) for v in subs):
                raise FilterError("NOT needs a filter object or a non-empty list of them", key=key)
            out += [{"NOT": _one(sub, depth + 1)} for sub in subs]
        else:
            out += _field(key, value)
    return out


def _one(filters: dict[str, Any], depth: int) -> dict[str, Any]:
    conds = _conditions(filters, depth)
    if not conds:
        raise FilterError("an empty filter object inside AND / OR / NOT", hint="drop it, or give it a condition")
    return conds[0] if len(conds) == 1 else {"AND": conds}


def _field(key: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(key, str) or not key or key.startswith(("@", "$")):
        raise FilterError(f"filter key {key!r} is not a platform field or a metadata key", key=str(key))
    if key == "metadata":
        if not isinstance(value, dict) or not value:
            raise FilterError('metadata filters take {"key": value} pairs', hint='e.g. {"metadata": {"food": "vegan"}}')
        out = []
        for k, v in value.items():
            out += _field(k, v) if k not in FIELDS and k != "metadata" else _refuse_nested(k)
        return out
    target = FIELDS.get(key, key)
    if value == WILDCARD:
        return [{"NOT": {target: None}}]
    if key == "memory_ids":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FilterError("memory_ids takes a list of memory ids", key=key)
        return [{target: {"in": value}}]
    return [{target: value}]


def _refuse_nested(key: str) -> list[dict[str, Any]]:
    raise FilterError(f"metadata filter key {key!r} names a platform field", hint=f"filter on {key} at the top level")


# -- answers -----------------------------------------------------------------------------------------
def _time(value: Any) -> Any:
    """ISO-8601 text in UTC with its offset (memstore stores naive UTC)."""
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    if isinstance(value, str) and value and not value.endswith("Z") and "+" not in value[10:]:
        return value + "Z"
    return value


def platform_memory(rec: dict[str, Any]) -> dict[str, Any]:
    """A memstore memory record as the platform's memory object (score kept for searches)."""
    meta = dict(rec.get("metadata") or {})
    app_id = meta.pop("app_id", None)
    categories = meta.get("categories") if isinstance(meta.get("categories"), list) else []
    out = {"id": rec["id"], "memory": rec.get("memory"), "user_id": rec.get("user_id"),
           "agent_id": rec.get("agent_id"), "app_id": app_id, "run_id": rec.get("run_id"),
           "hash": rec.get("hash"), "metadata": meta or None, "categories": categories,
           "created_at": _time(rec.get("created_at")), "updated_at": _time(rec.get("updated_at")),
           "expiration_date": _time(rec.get("expiration_date")), "immutable": False,
           "structured_attributes": None}
    if "score" in rec:
        out["score"] = rec["score"]
    return out


def platform_history(rec: dict[str, Any]) -> dict[str, Any]:
    """A memstore history event as the platform's history entry."""
    return {"id": rec.get("id"), "memory_id": rec.get("memory_id"), "input": [],
            "old_memory": rec.get("old_memory"), "new_memory": rec.get("new_memory"),
            "user_id": rec.get("user_id"), "agent_id": rec.get("agent_id"), "run_id": rec.get("run_id"),
            "categories": [], "event": rec.get("event"), "metadata": None,
            "created_at": _time(rec.get("created_at")), "updated_at": _time(rec.get("created_at"))}


def platform_added(rec: dict[str, Any]) -> dict[str, Any]:
    """One result of an add, in the platform's v1.1 shape (with the v1.0 `data` too)."""
    return {"id": rec.get("id"), "memory": rec.get("memory"), "event": rec.get("event", "ADD"),
            "data": {"memory": rec.get("memory")}}


ENTITY_TYPES = {"user": "user_id", "agent": "agent_id", "run": "run_id"}


def platform_entities(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The platform's entity list (users, agents, runs with memories) from scope_summary rows."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        if not row.get("memories"):
            continue
        for kind, key in ENTITY_TYPES.items():
            name = row.get(key)
            if not name:
                continue
            ent = found.setdefault((kind, name), {"id": name, "name": name, "type": kind, "total_memories": 0,
                                                   "owner": "memstore", "metadata": None,
                                                   "created_at": None, "updated_at": None})
            ent["total_memories"] += int(row.get("current") or 0)
            last = _time(row.get("last_activity"))
            if last and (ent["updated_at"] is None or last > ent["updated_at"]):
                ent["updated_at"] = last
            ent["created_at"] = ent["created_at"] or ent["updated_at"]
    return sorted(found.values(), key=lambda e: (e["type"], e["name"]))
