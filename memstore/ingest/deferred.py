"""Fewer statements per ingest transaction: appends to tables that the write steps never read back
are collected and written once per table at the end of the transaction.

Each DuckDB statement costs milliseconds however few rows it carries, so writing a group of
conversations as (rounds x tables) small INSERTs is what would bound ingest. The write steps read
only `memories` (dedupe, slot supersession) and `entities` (insert_entities), so those stay
immediate; messages, postings, links, history, extraction runs and ingest_log rows wait for
`flush()`, inside the same transaction, so what commits is the same.

>>> import datetime as dt, pyarrow as pa
>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=4, embedder="test")
>>> w = DeferredInserts(db)
>>> for n in range(3):
...     w.insert_arrow("history", pa.table({"id": [f"h{n}"], "memory_id": ["m1"], "event": ["ADD"],
...                                         "created_at": [dt.datetime(2024, 1, 1)]}))
>>> db.scalar("SELECT count(*) FROM history"), w.pending_rows
(0, 3)
>>> with db.transaction("t"):
...     w.flush()
>>> db.scalar("SELECT count(*) FROM history"), w.pending_rows
(3, 0)
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

EAGER_TABLES = frozenset({"memories", "entities"})


class DeferredInserts:
    """Stands in for a Database inside the write steps; everything but `insert_arrow` on deferred
    tables goes straight to the real database."""

    def __init__(self, db: Any, eager: frozenset[str] = EAGER_TABLES) -> None:
        self._db = db
        self._eager = eager
        self._pending: dict[str, list[pa.Table]] = {}

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        if table in self._eager:
            self._db.insert_arrow(table, data)
        elif data.num_rows:
            self._pending.setdefault(table, []).append(data)

    def insert_rows(self, table: str, data: pa.Table) -> None:
        """As `insert_arrow`: eager tables get their small parameterised INSERT now."""
        if table in self._eager:
            self._db.insert_rows(table, data)
        elif data.num_rows:
            self._pending.setdefault(table, []).append(data)

    @property
    def pending_rows(self) -> int:
        return sum(t.num_rows for parts in self._pending.values() for t in parts)

    def flush(self) -> None:
        """Write what is pending, one INSERT per table (call inside the transaction)."""
        pending, self._pending = self._pending, {}
        for table, parts in pending.items():
            try:
                whole = pa.concat_tables(parts, promote_options="default")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                for part in parts:       # shapes differ (a step changed its columns): one by one
                    self._db.insert_arrow(table, part)
                continue
            self._db.insert_arrow(table, whole)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)
