"""Writers: where the rows of committed adds go. One interface, two implementations.

- `ImmediateWriter`: each table's rows are written as they come (a plain `add()`: one add = one
  transaction, a few rows per table: small parameterised INSERTs).
- `BatchedWriter`: rows wait and are written once per table for the whole unit (one Arrow batch
  per table): ingest, the server's group commit, the mem0 import.

A unit of work is one transaction (`with writer.unit(): ...`). Inside it, each add sees the adds
before it exactly as if they had been committed one after another:

- de-duplication asks `entry(scope_key)`: the in-process copy of the scope's current memories
  (store/scope_cache.py), which follows every add of the unit as it is written; the COMMIT keeps
  it, a ROLLBACK drops it;
- slot reads (`slot_rows`) and validity closures (`close`) write what is pending first when it
  could change their answer (a pending memory on the same slot, or a closure of a pending memory).

No step asks which writer it has or whether it is inside a transaction.

>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=2, embedder="t")
>>> w = BatchedWriter(db)
>>> with w.unit("doc"):
...     w.entry("u=a|a=|r=").size
0
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator, Protocol

import pyarrow as pa

from memstore.store.scope_cache import ScopeEntry
from memstore.write.rows import ADD_TABLES


class Writer(Protocol):
    """What the write steps (dedupe, slot supersession, commit) need from where rows go."""

    def unit(self, step: str = "commit") -> contextlib.AbstractContextManager[Writer]:
        """One transaction: everything written inside commits together or not at all."""

    def entry(self, scope_key: str) -> ScopeEntry:
        """The scope's current memories as this unit sees them (dedupe)."""

    def slot_rows(self, name: str, params: dict[str, Any], keys: Iterable[str]) -> list[tuple]:
        """A read of the memories holding the subject|slot `keys` of scope params["scope_key"]."""

    def close(self, name: str, params: dict[str, Any]) -> list[tuple]:
        """Close the validity of memories params["ids"] (an UPDATE … RETURNING id, memory); the
        unit's view drops them."""

    def write(self, state: Any, tables: dict[str, pa.Table]) -> None:
        """Store one add's rows; the unit's view follows it (its current memories)."""

    def append(self, tables: dict[str, pa.Table]) -> None:
        """Store more rows of the unit (e.g. the SUPERSEDE events of what an add closed)."""

    def prune(self, scope_key: str, messages: pa.Table, keep: int) -> None:
        """Keep the scope's newest `keep` add() messages, counting this add's `messages`."""


class _UnitWriter:
    """What both writers share: the unit, the scope view that follows each add, the reads."""

    batched = False

    def __init__(self, db: Any) -> None:
        self.db = db
        self.cache = db.scope_cache
        self._reset()

    def _reset(self) -> None:
        self._entries: dict[str, ScopeEntry] = {}
        self._pending: dict[str, list[pa.Table]] = {}
        self._pending_ids: dict[str, set[str]] = {}        # scope -> memory ids not written yet
        self._pending_keys: dict[str, set[str]] = {}       # scope -> subject|slot keys not written yet
        self._pruned: list[tuple[str, list[str]]] = []

    @contextlib.contextmanager
    def unit(self, step: str = "commit") -> Iterator[_UnitWriter]:
        self._reset()
        try:
            with self.db.transaction(step, cache_follows=True):
                yield self
                self.flush()
        finally:
            self._reset()

    # -- reads --------------------------------------------------------------------------------
    def entry(self, scope_key: str) -> ScopeEntry:
        e = self._entries.get(scope_key)
        if e is None:
            e = self._entries[scope_key] = self.cache.entry(self.db, scope_key)
        return e

    def slot_rows(self, name: str, params: dict[str, Any], keys: Iterable[str]) -> list[tuple]:
        if self._pending_keys.get(params["scope_key"], set()) & set(keys):
            self.flush()
        return self.db.rows(name, params)

    def close(self, name: str, params: dict[str, Any]) -> list[tuple]:
        if self._pending_ids.get(params["scope_key"], set()) & set(params["ids"]):
            self.flush()
        closed = self.db.rows(name, params, writes=True)
        e = self.entry(params["scope_key"])
        with self.cache.lock:
            e.drop([r[0] for r in closed])
        return closed

    # -- writes -------------------------------------------------------------------------------
    def append(self, tables: dict[str, pa.Table]) -> None:
        self._store(tables)

    def write(self, state: Any, tables: dict[str, pa.Table]) -> None:
        sc = state.scope
        mem = tables["memories"]
        self._store(tables)
        if self.batched and mem.num_rows:
            self._pending_ids.setdefault(sc.key, set()).update(mem.column("id").to_pylist())
            self._pending_keys.setdefault(sc.key, set()).update(
                f"{s}|{k}" for s, k in zip(mem.column("subject").to_pylist(), mem.column("slot").to_pylist()) if k)
        current = [f for f in state.facts if f.outcome == "added" and f.superseded_by is None]
        e = self.entry(sc.key)
        with self.cache.lock:
            e.extend([f.id for f in current], [f.hash for f in current], [f.text for f in current],
                     [f.embedding for f in current], [f.expires_at or state.expiration_date for f in current])
            ents = tables["entities"]
            if ents.num_rows:
                self.cache.known_entities.update(ents.column("id").to_pylist())

    def prune(self, scope_key: str, messages: pa.Table, keep: int) -> None:
        if self.batched and self.cache.max_rows <= 0:
            self.flush()            # no cached message list: the pruning read must see pending messages
        new = list(zip(messages.column("created_at").to_pylist(), messages.column("id").to_pylist())) \
            if messages.num_rows else []
        drop = self.cache.messages_to_prune(self.db, scope_key, new, keep)
        self.cache.follow_messages(scope_key, new, drop)
        if drop:
            self._prune(scope_key, drop)

    def _store(self, tables: dict[str, pa.Table]) -> None:
        raise NotImplementedError

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Write what is pending (the batched writer), inside the unit's transaction."""


class ImmediateWriter(_UnitWriter):
    """Every table's rows are written as they come: one small statement per table with rows.

    >>> from memstore.store.database import Database
    >>> ImmediateWriter(Database(":memory:", dim=2, embedder="t")).batched
    False
    """

    batched = False

    def _store(self, tables: dict[str, pa.Table]) -> None:
        db = self.db
        ents = tables.get("entities")
        if ents is not None and ents.num_rows \
                and not self.cache.known_entities.issuperset(ents.column("id").to_pylist()):
            db.upsert_entities(ents)
        for name, rows in tables.items():
            if name != "entities" and rows.num_rows:
                (db.insert_rows if name in ADD_TABLES else db.insert_arrow)(name, rows)

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        self.db.prune_messages(scope_key, ids)


class BatchedWriter(_UnitWriter):
    """Rows wait and are written once per table for the whole unit, as one Arrow batch each.

    >>> import datetime as dt
    >>> from memstore.store.database import Database
    >>> db = Database(":memory:", dim=2, embedder="t")
    >>> w = BatchedWriter(db)
    >>> with w.unit("doc"):
    ...     for n in range(3):
    ...         w._store({"history": pa.table({"id": [f"h{n}"], "memory_id": ["m1"], "event": ["ADD"],
    ...                                         "created_at": [dt.datetime(2024, 1, 1)]})})
    ...     w.pending_rows, db.scalar("SELECT count(*) FROM history")
    (3, 0)
    >>> db.scalar("SELECT count(*) FROM history")
    3
    """

    batched = True

    @property
    def pending_rows(self) -> int:
        return sum(t.num_rows for parts in self._pending.values() for t in parts)

    def _store(self, tables: dict[str, pa.Table]) -> None:
        for name, rows in tables.items():
            if rows.num_rows:
                self._pending.setdefault(name, []).append(rows)

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        self._pruned.append((scope_key, list(ids)))

    def flush(self) -> None:
        pending, self._pending = self._pending, {}
        pruned, self._pruned = self._pruned, []
        self._pending_ids, self._pending_keys = {}, {}
        db = self.db
        ents = pending.pop("entities", [])
        if ents:
            whole = pa.concat_tables(ents, promote_options="default")
            ids = whole.column("id").to_pylist()
            first = sorted({i: k for k, i in reversed(list(enumerate(ids)))}.values())     # one row per id
            db.upsert_entities(whole.take(first))
        if pruned and "messages" in pending:      # a message pruned in the same unit is never written
            gone = {i for _, ids in pruned for i in ids}
            pending["messages"] = [t.filter(pa.array([i not in gone for i in t.column("id").to_pylist()]))
                                   for t in pending["messages"]]
        order = [t for t in ADD_TABLES if t in pending] + [t for t in pending if t not in ADD_TABLES]
        for name in order:
            whole = pa.concat_tables(pending[name], promote_options="default")
            if whole.num_rows:
                db.insert_arrow(name, whole)
        by_scope: dict[str, list[str]] = {}
        for scope_key, ids in pruned:
            by_scope.setdefault(scope_key, []).extend(ids)
        for scope_key, ids in by_scope.items():
            db.prune_messages(scope_key, list(dict.fromkeys(ids)))
