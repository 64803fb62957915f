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
- the truth reads (`slot_holders`, `slot_history`) and validity closures (`close`) see the
  unit's earlier adds: the batched writer answers for its pending memories itself (an overlay of
  their truth columns, applied to their rows when they are written) and asks the store for the
  rest, so a supersession inside a unit costs no early write.

No step asks which writer it has or whether it is inside a transaction.

>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=2, embedder="t")
>>> w = BatchedWriter(db)
>>> with w.unit("commit"):
...     w.entry("u=a|a=|r=").size
0
"""
from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from memstore.core.errors import StoreWriteError
from memstore.core.rules.slots import holder_key, slot_key
from memstore.core.rules.supersession import Closure, closed_at
from memstore.core.rules.validity import fact_expires_at, fact_valid_from
from memstore.store.history import HistoryEvent, history_rows  # noqa: F401  (doctests)
from memstore.store.rows import ADD_TABLES
from memstore.store.scope_cache import ScopeEntry
from memstore.store.table_rows import Rows, as_arrow
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.core.model import AddState
    from memstore.store.database import Database

CLOSE_SQL = {"supersede": "queries/supersede_memories", "narrow": "queries/narrow_validity"}


class Writer(Protocol):
    """What the write steps (dedupe, slot supersession, commit) need from where rows go."""

    def unit(self, step: str = "commit") -> contextlib.AbstractContextManager[Writer]:
        """One transaction: everything written inside commits together or not at all."""

    def entry(self, scope_key: str) -> ScopeEntry:
        """The scope's current memories as this unit sees them (dedupe)."""

    def slot_holders(self, scope_key: str, keys: Sequence[str], now: dt.datetime) -> list[tuple[Any, ...]]:
        """(id, key, valid_from) of the scope's current, unexpired memories holding a subject|slot key."""

    def slot_history(self, scope_key: str, key: str, now: dt.datetime) -> list[tuple[Any, ...]]:
        """(id, valid_from, invalidated_at) of the scope's unexpired memories ever on the key."""

    def expect_slots(self, pairs: Iterable[tuple[str, str]]) -> None:
        """(scope_key, subject|slot key) pairs the unit's adds may ask `slot_history` of: a writer
        may read them together, once, at the first question."""

    def close(self, kind: Closure, *, scope_key: str, ids: Sequence[str], at: dt.datetime, new_id: str,
              now: dt.datetime) -> list[tuple[Any, ...]]:
        """Close the validity of memories `ids` ("supersede": still current ones end at `at`, never
        before they began; "narrow": closed ones that ended after `at` now end there); returns
        (id, memory) of what was closed. The unit's view drops them."""

    def write(self, state: AddState, tables: dict[str, Rows]) -> None:
        """Store one add's rows; the unit's view follows it (its current memories)."""

    def append(self, tables: dict[str, Rows]) -> None:
        """Store more rows of the unit (e.g. the SUPERSEDE events of what an add closed)."""

    def prune(self, scope_key: str, messages: Rows, keep: int) -> None:
        """Keep the scope's newest `keep` add() messages, counting this add's `messages`."""


class _UnitWriter:
    """What both writers share: the unit, the scope view that follows each add, the store reads."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.cache = db.scope_cache
        self._reset()

    def _reset(self) -> None:
        self._entries: dict[str, ScopeEntry] = {}

    @contextlib.contextmanager
    def unit(self, step: str = "commit") -> Iterator[_UnitWriter]:
        self._reset()
        try:
            with write_unit(self.db, step, cache_follows=True):
                yield self
                self.flush()
                # every scope the unit wrote went through entry() (its adds, what they closed):
                # search snapshots of the other scopes stay valid across this commit
                self.db.scopes_changed(self._entries)
        finally:
            self._reset()

    def flush(self) -> None:
        """Write what is pending (the batched writer), inside the unit's transaction."""

    # -- reads --------------------------------------------------------------------------------
    def entry(self, scope_key: str) -> ScopeEntry:
        e = self._entries.get(scope_key)
        if e is None:
            e = self._entries[scope_key] = self.cache.entry(self.db, scope_key)
        return e

    def slot_holders(self, scope_key: str, keys: Sequence[str], now: dt.datetime) -> list[tuple[Any, ...]]:
        # the scope's copy knows the slot each current memory holds: no statement inside the unit
        e = self.entry(scope_key)
        with self.cache.lock:
            return e.slot_holders(keys, now)

    def slot_history(self, scope_key: str, key: str, now: dt.datetime) -> list[tuple[Any, ...]]:
        return self.db.rows("queries/slot_history_memories", {"scope_key": scope_key, "key": key, "now": now})

    def expect_slots(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Each question is its own statement here (an immediate writer's unit is one add)."""

    def close(self, kind: Closure, *, scope_key: str, ids: Sequence[str], at: dt.datetime, new_id: str,
              now: dt.datetime) -> list[tuple[Any, ...]]:
        closed = self._close_stored(kind, scope_key, list(ids), at, new_id, now)
        self._drop(scope_key, [r[0] for r in closed])
        return closed

    def _close_stored(self, kind: Closure, scope_key: str, ids: list[str], at: dt.datetime, new_id: str,
                      now: dt.datetime) -> list[tuple[Any, ...]]:
        if not ids:
            return []
        return self.db.rows(CLOSE_SQL[kind], {"scope_key": scope_key, "ids": ids, "at": at, "new_id": new_id,
                                              "now": now}, writes=True)

    def _drop(self, scope_key: str, ids: list[str]) -> None:
        e = self.entry(scope_key)
        with self.cache.lock:
            e.drop(ids)

    # -- writes -------------------------------------------------------------------------------
    def append(self, tables: dict[str, Rows]) -> None:
        self._store(tables)

    def write(self, state: AddState, tables: dict[str, Rows]) -> None:
        self._store(tables)
        current = [f for f in state.facts if f.outcome == "added" and f.superseded_by is None]
        e = self.entry(state.scope.key)
        with self.cache.lock:
            e.extend([f.stored_id for f in current], [f.hash or "" for f in current], [f.text for f in current],
                     [f.embedding for f in current], [fact_expires_at(f, state) for f in current],
                     [(holder_key(f.subject, f.slot, f.slot_value), fact_valid_from(f, state)) for f in current])
        self._known(tables.get("entities"))

    def _known(self, ents: Rows | None) -> None:
        """The scope cache learns which entities are stored (so a later add skips the statement)."""
        if ents is not None and ents.num_rows:
            with self.cache.lock:
                self.cache.known_entities.update(ents.column("id"))

    def prune(self, scope_key: str, messages: Rows, keep: int) -> None:
        new = list(zip(messages.column("created_at"), messages.column("id")))
        drop = self.cache.messages_to_prune(self.db, scope_key, new, keep)
        self.cache.follow_messages(scope_key, new, drop)
        if drop:
            self._prune(scope_key, drop)

    def _store(self, tables: dict[str, Rows]) -> None:
        raise NotImplementedError

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        raise NotImplementedError


class ImmediateWriter(_UnitWriter):
    """Every table's rows are written as they come: one small statement per table with rows.

    >>> from memstore.store.database import Database
    >>> db = Database(":memory:", dim=2, embedder="t")
    >>> w = ImmediateWriter(db)
    >>> with w.unit("commit"):
    ...     w.append({"history": history_rows("full", [HistoryEvent("m1", "ADD", created_at=dt.datetime(2024, 1, 1))])})
    ...     db.scalar("SELECT count(*) FROM history")        # written at once, committed with the unit
    1
    """

    def _store(self, tables: dict[str, Rows]) -> None:
        db = self.db
        ents = tables.get("entities")
        if ents is not None and ents.num_rows and not self.cache.known_entities.issuperset(ents.column("id")):
            db.upsert_entities(ents.arrow())
        for name, rows in tables.items():
            if name != "entities" and rows.num_rows:
                if isinstance(rows, Rows):
                    db.insert_values(name, rows.cols)
                else:
                    db.insert_arrow(name, rows)

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        self.db.prune_messages([scope_key], ids)


@dataclass
class _Pending:
    """The truth columns of a memory this unit has not written yet."""

    scope_key: str
    key: str | None                 # subject|slot
    valid_from: dt.datetime
    expires: dt.datetime | None
    text: str
    invalidated_at: dt.datetime | None = None
    superseded_by: str | None = None
    updated_at: dt.datetime | None = None      # set when the unit closed it (its row is then patched)

    def unexpired(self, now: dt.datetime) -> bool:
        return self.expires is None or self.expires > now


@dataclass
class _Stored:
    """A stored memory on a slot, read once per unit for its late facts (its `invalidated_at` as
    stored: what the unit closed since is in `BatchedWriter._closes`)."""

    scope_key: str
    id: str
    valid_from: dt.datetime
    invalidated_at: dt.datetime | None
    text: str
    expires: dt.datetime | None


class BatchedWriter(_UnitWriter):
    """Rows wait and are written once per table for the whole unit, as one Arrow batch each.

    >>> import datetime as dt
    >>> from memstore.store.database import Database
    >>> db = Database(":memory:", dim=2, embedder="t")
    >>> w = BatchedWriter(db)
    >>> with w.unit("commit"):
    ...     for n in range(3):
    ...         w.append({"history": history_rows("full", [HistoryEvent(f"m{n}", "ADD", created_at=dt.datetime(2024, 1, 1))])})
    ...     w.pending_rows, db.scalar("SELECT count(*) FROM history")
    (3, 0)
    >>> db.scalar("SELECT count(*) FROM history")
    3
    """

    def _reset(self) -> None:
        super()._reset()
        self._pending: dict[str, Rows | list[pa.Table]] = {}
        self._mem: dict[str, _Pending] = {}          # memory id -> its truth columns, until written
        self._pruned: list[tuple[str, list[str]]] = []
        # stored memory id -> (scope_key, at, new_id, now, invalidated_at as stored), until flush
        self._closes: dict[str, tuple[Any, ...]] = {}
        self._forget_history()
        self._slots_expected: set[tuple[str, str]] = set()

    def _forget_history(self) -> None:
        self._history: dict[tuple[str, str], list[_Stored]] = {}     # (scope_key, key) -> stored rows
        self._stored: dict[str, _Stored] = {}                        # memory id -> its row there

    @property
    def pending_rows(self) -> int:
        return sum(p.num_rows if isinstance(p, Rows) else sum(t.num_rows for t in p) for p in self._pending.values())

    # -- the overlay of pending memories ------------------------------------------------------------
    def write(self, state: AddState, tables: dict[str, pa.Table]) -> None:
        sc = state.scope.key
        for f in state.facts:
            if f.outcome == "added":
                late = f.superseded_by
                self._mem[f.stored_id] = _Pending(
                    sc, slot_key(f.subject, f.slot),
                    fact_valid_from(f, state), fact_expires_at(f, state), f.text,
                    invalidated_at=late[1] if late else None, superseded_by=late[0] if late else None)
        super().write(state, tables)

    def expect_slots(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._slots_expected.update(pairs)

    def slot_history(self, scope_key: str, key: str, now: dt.datetime) -> list[tuple[Any, ...]]:
        """The stored rows (read with every expected key at the first question: one statement for
        the unit's late facts, not one each) as this unit left them, then its pending ones."""
        stored = [(r.id, r.valid_from, self._until(r)) for r in self._read_history(scope_key, key)
                  if r.expires is None or r.expires > now]
        mine = [(mid, m.valid_from, m.invalidated_at) for mid, m in self._mem.items()
                if m.scope_key == scope_key and m.key == key and m.unexpired(now)]
        return stored + mine

    def _read_history(self, scope_key: str, key: str) -> list[_Stored]:
        pair = (scope_key, key)
        if pair not in self._history:
            want = sorted({pair} | (self._slots_expected - self._history.keys()))
            for p in want:
                self._history[p] = []
            rows = self.db.rows("queries/slot_history_batch", {"scope_keys": [p[0] for p in want],
                                                                "keys": [p[1] for p in want]})
            for sk, k, mid, valid_from, until, text, expires in rows:
                r = self._stored.setdefault(mid, _Stored(sk, mid, valid_from, until, text, expires))
                self._history[(sk, k)].append(r)
        return self._history[pair]

    def _until(self, r: _Stored) -> dt.datetime | None:
        c = self._closes.get(r.id)
        return c[1] if c is not None else r.invalidated_at

    def close(self, kind: Closure, *, scope_key: str, ids: Sequence[str], at: dt.datetime, new_id: str,
              now: dt.datetime) -> list[tuple[Any, ...]]:
        ids = list(ids)
        stored = [i for i in ids if i not in self._mem]
        closed: list[tuple[Any, ...]] = []
        if kind == "supersede" and stored:
            closed, stored = self._defer_supersede(scope_key, stored, at, new_id, now)
        elif kind == "narrow" and stored:
            closed, stored = self._defer_narrow(scope_key, stored, at, new_id, now)
        direct = self._close_stored(kind, scope_key, stored, at, new_id, now)
        if direct:                  # the store changed under the rows read for late facts: read again
            self._forget_history()
        closed += direct
        for mid in ids:             # the rule of core/rules/supersession.py (the SQL applies it to stored rows)
            m = self._mem.get(mid)
            if m is None or m.scope_key != scope_key:
                continue
            end = closed_at(kind, m.valid_from, m.invalidated_at, at)
            if end is None:
                continue
            m.invalidated_at, m.superseded_by, m.updated_at = end, new_id, now
            closed.append((mid, m.text))
        self._drop(scope_key, [r[0] for r in closed])
        return closed

    def _defer_supersede(self, scope_key: str, ids: list[str], at: dt.datetime, new_id: str,
                         now: dt.datetime) -> tuple[list[tuple[Any, ...]], list[str]]:
        """Supersede stored memories the scope's copy holds as current without a statement now:
        their closure (closed_at, from the valid_from the copy holds) waits for flush, where ONE
        statement closes every one of the unit (a statement each cost ~2-7 ms of the owner's CPU in
        a group). Returns (id, text) of what it closed and the ids it left to the statement."""
        e = self.entry(scope_key)
        closed, rest = [], []
        with self.cache.lock:
            for mid in ids:
                if mid in self._closes:         # closed by an earlier add of this unit: nothing to close
                    continue
                j = e.current(mid)
                if j is None:
                    rest.append(mid)
                    continue
                self._closes[mid] = (scope_key, closed_at("supersede", e.froms[j], None, at), new_id, now, None)
                closed.append((mid, e.texts[j]))
        return closed, rest

    def _defer_narrow(self, scope_key: str, ids: list[str], at: dt.datetime, new_id: str,
                      now: dt.datetime) -> tuple[list[tuple[Any, ...]], list[str]]:
        """Narrow stored memories this unit read for a late fact (`slot_history`) without a
        statement now: the rule applies to the interval as the unit left it, the closure joins the
        unit's one statement at flush (an UPDATE ... RETURNING each cost ~3-5 ms of the owner's
        CPU). Returns (id, text) of what it closed and the ids it left to a statement."""
        closed, rest = [], []
        for mid in ids:
            r = self._stored.get(mid)
            if r is None:
                rest.append(mid)
                continue
            end = closed_at("narrow", r.valid_from, self._until(r), at) if r.scope_key == scope_key else None
            if end is None:
                continue
            before = self._closes[mid][4] if mid in self._closes else r.invalidated_at
            self._closes[mid] = (scope_key, end, new_id, now, before)
            closed.append((mid, r.text))
        return closed, rest

    def _flush_closes(self) -> None:
        closes, self._closes = self._closes, {}
        if not closes:
            return
        ids = list(closes)
        cols = list(zip(*closes.values()))
        done = self.db.rows("queries/supersede_memories_batch", {
            "ids": ids, "scope_keys": list(cols[0]), "ats": list(cols[1]), "new_ids": list(cols[2]),
            "nows": list(cols[3]), "befores": list(cols[4])}, writes=True)
        changed = done[0][0] if done else 0
        if changed != len(ids):     # the unit's view (scope cache, rows read) was not the store's: roll back
            raise StoreWriteError("supersede", RuntimeError(
                f"{len(ids) - changed} of {len(ids)} memories this unit closed were not in the store as it saw "
                f"them (current, or closed when); the unit is rolled back and retried from the store"))

    # -- rows ------------------------------------------------------------------------------------
    def _known(self, ents: pa.Table | None) -> None:
        """Entities are known once written (flush)."""

    def _store(self, tables: dict[str, Rows]) -> None:
        for name, rows in tables.items():
            if not rows.num_rows:
                continue
            have = self._pending.get(name)
            if not isinstance(rows, Rows):                  # Arrow rows: joined at flush
                self._pending.setdefault(name, []).append(rows)
            elif have is None:
                self._pending[name] = rows.copy()           # the unit's own columns: the add's stay as built
            else:
                assert isinstance(have, Rows), f"{name}: Arrow and column rows in one unit"
                have.extend(rows)

    def _prune(self, scope_key: str, ids: list[str]) -> None:
        self._pruned.append((scope_key, list(ids)))

    def prune(self, scope_key: str, messages: pa.Table, keep: int) -> None:
        if self.cache.max_rows <= 0:
            self.flush()            # no cached message list: the pruning read must see pending messages
        super().prune(scope_key, messages, keep)

    def _memories(self, rows: Rows) -> Rows:
        """The pending memories with the truth columns the unit gave them since (closures)."""
        mems = [self._mem[i] for i in rows.column("id")]
        if all(m.updated_at is None for m in mems):
            return rows
        for name in ("invalidated_at", "superseded_by", "updated_at"):
            rows.set(name, [getattr(m, name) if m.updated_at is not None else g
                            for m, g in zip(mems, rows.column(name))])
        return rows

    def flush(self) -> None:
        pending, self._pending = self._pending, {}
        pruned, self._pruned = self._pruned, []
        db = self.db
        ents = pending.pop("entities", None)
        if ents is not None:
            whole = as_arrow(ents)
            ids = whole.column("id").to_pylist()
            first = sorted({i: k for k, i in reversed(list(enumerate(ids)))}.values())     # one row per id
            keep = [k for k in first if ids[k] not in self.cache.known_entities]
            if keep:
                new = whole.take(keep)
                db.upsert_entities(new)
                with self.cache.lock:
                    self.cache.known_entities.update(new.column("id").to_pylist())
        msgs = pending.get("messages")
        if pruned and isinstance(msgs, Rows):   # a message pruned in the same unit is never written
            gone = {i for _, ids in pruned for i in ids}
            keep_rows = [k for k, i in enumerate(msgs.column("id")) if i not in gone]
            pending["messages"] = Rows(msgs.schema, {c: [v[k] for k in keep_rows] for c, v in msgs.cols.items()})
        order = [t for t in ADD_TABLES if t in pending] + [t for t in pending if t not in ADD_TABLES]
        for name in order:
            part = pending[name]
            if name == "memories" and isinstance(part, Rows):
                part = self._memories(part)
            whole = part.arrow() if isinstance(part, Rows) else pa.concat_tables(part, promote_options="default")
            if whole.num_rows:
                db.insert_arrow(name, whole)
        self._mem = {}
        self._flush_closes()
        self._forget_history()          # what was pending is stored now: a later question reads again
        if pruned:                      # one statement for every scope the unit pruned
            db.prune_messages(list(dict.fromkeys(k for k, _ in pruned)),
                              list(dict.fromkeys(i for _, ids in pruned for i in ids)))
