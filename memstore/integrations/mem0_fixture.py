"""Write a store in mem0 OSS's on-disk layout (for the import tests and bench/import_mem0.py):
a Qdrant local-mode collection whose points carry mem0's payload (`data`, `hash`, identity,
`created_at`, `updated_at`, metadata as top-level keys) and a SQLite history.db with mem0's
`history` (and `messages`) tables, as mem0/memory/storage.py creates them."""
from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

# mem0/memory/storage.py (SQLiteManager._create_history_table / _create_messages_table)
HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS history (
    id           TEXT PRIMARY KEY,
    memory_id    TEXT,
    old_memory   TEXT,
    new_memory   TEXT,
    event        TEXT,
    created_at   DATETIME,
    updated_at   DATETIME,
    is_deleted   INTEGER,
    actor_id     TEXT,
    role         TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    session_scope TEXT,
    role TEXT,
    content TEXT,
    name TEXT,
    created_at DATETIME
);
"""


def mem0_payload(text: str, *, created_at: str, updated_at: str | None = None, **fields: Any) -> dict[str, Any]:
    """A point payload as mem0's `_create_memory` writes it (metadata keys at the top level).

    >>> sorted(mem0_payload("Likes tea", created_at="2024-01-01T00:00:00+00:00", user_id="a", topic="x"))
    ['created_at', 'data', 'hash', 'topic', 'updated_at', 'user_id']
    """
    return {**{k: v for k, v in fields.items() if v is not None}, "data": text,
            "hash": hashlib.md5(text.encode()).hexdigest(), "created_at": created_at,
            "updated_at": updated_at or created_at}


def write_mem0_store(qdrant_path: str | os.PathLike, history_path: str | os.PathLike | None,
                     points: Iterable[tuple[str, list[float], dict[str, Any]]], *, dim: int,
                     history: Iterable[dict[str, Any]] = (), collection: str = "mem0",
                     batch: int = 1000) -> None:
    """Create the collection (cosine, `dim`) and upsert (id, vector, payload) points; write history rows."""
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    client = QdrantClient(path=os.fspath(qdrant_path))
    try:
        if not client.collection_exists(collection):
            client.create_collection(collection, vectors_config=VectorParams(size=dim, distance=Distance.COSINE))
        buf: list[Any] = []
        for pid, vec, payload in points:
            buf.append(PointStruct(id=pid, vector=vec, payload=payload))
            if len(buf) >= batch:
                client.upsert(collection, points=buf)
                buf = []
        if buf:
            client.upsert(collection, points=buf)
    finally:
        client.close()
    if history_path is None:
        return
    con = sqlite3.connect(os.fspath(history_path))
    try:
        con.executescript(HISTORY_SCHEMA)
        con.executemany("INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
                        "is_deleted, actor_id, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(h["id"], h["memory_id"], h.get("old_memory"), h.get("new_memory"), h["event"],
                          h.get("created_at"), h.get("updated_at"), int(h.get("is_deleted", 0)), h.get("actor_id"),
                          h.get("role")) for h in history])
        con.commit()
    finally:
        con.close()
