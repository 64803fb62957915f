"""Turn stored rows into mem0-shaped result dicts."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from memstore.core.rules import validity
from memstore.core.timeutil import utcnow

_TIME_KEYS = ("created_at", "updated_at", "expiration_date", "valid_from", "invalidated_at")


def iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (dt.datetime, dt.date)) else value


def memory_record(row: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """A memory as mem0 returns it (id, memory, hash, metadata, score, identity, times) plus
    memstore's validity and provenance fields."""
    meta = row.get("metadata")
    if isinstance(meta, str):
        meta = json.loads(meta)
    out: dict[str, Any] = {"id": row["id"], "memory": row["memory"], "hash": row.get("hash"), "metadata": meta or {}}
    if score is not None:
        out["score"] = float(score)
    for key in ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to"):
        if row.get(key) is not None:
            out[key] = row[key]
    for key in _TIME_KEYS:
        out[key] = iso(row.get(key))
    out["superseded_by"] = row.get("superseded_by")
    out["status"] = status_of(row)
    out["source_message_ids"] = list(row.get("source_message_ids") or [])
    return out


def with_sources(record: dict[str, Any], later: list[dict[str, Any]]) -> dict[str, Any]:
    """The record with `sources`, every occurrence of the memory (its first, then each later one
    de-duplication kept: memory_sources rows), when there was more than one.

    >>> rec = {"id": "m1", "metadata": {"n": 1}, "source_message_ids": ["a"], "created_at": "2024-01-01T00:00:00"}
    >>> [s["metadata"] for s in with_sources(rec, [{"message_ids": ["b"], "metadata": '{"n": 2}',
    ...                                             "created_at": None}])["sources"]]
    [{'n': 1}, {'n': 2}]
    """
    if not later:
        return record
    first = {"message_ids": record.get("source_message_ids", []), "metadata": record.get("metadata") or {},
             "created_at": record.get("created_at")}
    record["sources"] = [first] + [{"message_ids": list(r.get("message_ids") or []),
                                    "metadata": json.loads(r["metadata"]) if r.get("metadata") else {},
                                    "created_at": iso(r.get("created_at"))} for r in later]
    return record


def status_of(row: dict[str, Any], now: dt.datetime | None = None) -> str:
    """current | superseded | expired."""
    now = now or utcnow()
    return validity.status_of(row.get("invalidated_at"), row.get("expiration_date"), now)


def history_record(row: dict[str, Any]) -> dict[str, Any]:
    return {k: iso(v) for k, v in row.items()}
