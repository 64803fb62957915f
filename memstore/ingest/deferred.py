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

    def __init__(self, db: Any, eager: frozenset[str] = EAGER_TABLES, *, flush_on_read: bool = False) -> None:
        self._db = db
        self._eager = eager
        self._pending: dict[str, list[pa.Table]] = {}
        self._entities: list[pa.Table] = []
        self._pruned: list[tuple[str, list[str]]] = []
        # Group commit defers every table: any statement first writes what is pending, so reads
        # (slot supersession, the supersede UPDATEs) see the earlier adds of the group.
        self._flush_on_read = flush_on_read

    def upsert_entities(self, ents: pa.Table) -> None:
        if "entities" in self._eager:
            self._db.upsert_entities(ents)
        elif ents.num_rows:
            self._entities.append(ents)

    def prune_messages(self, scope_key: str, ids: list[str]) -> None:
        if "messages" in self._eager:
            self._db.prune_messages(scope_key, ids)
        elif ids:
            self._pruned.append((scope_key, list(ids)))

    def _statement(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._flush_on_read and (self._pending or self._entities or self._pruned):
            self.flush()
        return getattr(self._db, method)(*args, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._statement("run", *args, **kwargs)

    def rows(self, *args: Any, **kwargs: Any) -> Any:
        return self._statement("rows", *args, **kwargs)

    def dicts(self, *args: Any, **kwargs: Any) -> Any:
        return self._statement("dicts", *args, **kwargs)

    def arrow(self, *args: Any, **kwargs: Any) -> Any:
        return self._statement("arrow", *args, **kwargs)

    def scalar(self, *args: Any, **kwargs: Any) -> Any:
        return self._statement("scalar", *args, **kwargs)

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
        ents, self._entities = self._entities, []
        pruned, self._pruned = self._pruned, []
        if ents:
            whole = pa.concat_tables(ents, promote_options="default")
            ids = whole.column("id").to_pylist()
            first = sorted({i: k for k, i in reversed(list(enumerate(ids)))}.values())     # one row per id
            self._db.upsert_entities(whole.take(first))
        if pruned and "messages" in pending:      # a message pruned in the same group is never written
            gone = {i for _, ids in pruned for i in ids}
            pending["messages"] = [t.filter(pa.array([i not in gone for i in t.column("id").to_pylist()]))
                                   for t in pending["messages"]]
        for table, parts in pending.items():
            try:
                whole = pa.concat_tables(parts, promote_options="default")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                for part in parts:       # shapes differ (a step changed its columns): one by one
                    self._db.insert_arrow(table, part)
                continue
            self._db.insert_arrow(table, whole)
        by_scope: dict[str, list[str]] = {}
        for scope_key, ids in pruned:
            by_scope.setdefault(scope_key, []).extend(ids)
        for scope_key, ids in by_scope.items():
            self._db.prune_messages(scope_key, list(dict.fromkeys(ids)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)
