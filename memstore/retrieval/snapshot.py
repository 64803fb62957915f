"""Search snapshots: a hot scope's search inputs held in memory, so that its next searches run no
SQL statement at all (query embedding, analysis and NumPy fusion only).

A snapshot holds what memstore/retrieval/candidates.py reads per search, for the whole filtered
scope instead of the query's terms: the scope's current rows (fusion columns and the result records),
every keyword and entity posting of the scope, and the unit vectors (from the scope cache). It is
keyed by the compiled filter and its parameters and is valid while no change since its scope cache
generation touched a scope the filter covers: every add, every other write and any change of the
store files behind memstore's back bumps the generation (memstore/store/scope_cache.py), adds and
declared writes with the scopes they changed, and the next search of a changed scope reads the
store again (`ScopeCache.unchanged_since`).
Expiry is applied per search (`now` moves on); superseded, as_of and show_expired searches do not use
snapshots. A filter is snapshotted on its second search within one generation (one-off scopes of a
large store keep the cheaper query-term statements), and only when the scope holds at most
MAX_ROWS rows; snapshots are kept least recently used first up to TOTAL_ROWS rows per store.

>>> store = SnapshotStore()
>>> store.lookup(("w", ()), generation=3) is None       # unknown filter: read the store
True
>>> store.want(("w", ()), generation=3)                 # first search: no snapshot yet
False
>>> store.want(("w", ()), generation=3)                 # a second one in the same generation
True
"""
from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memstore.retrieval.candidates import unit_rows
from memstore.retrieval.fusion import (
    Hits,
    Neighbours,
    Scope,
    conversation_dot,
    conversation_groups,
    neighbour_context,
    neighbour_order,
)
from memstore.store.sqlfiles import load_sql

if TYPE_CHECKING:
    from memstore.store.database import Database

MAX_ROWS = 20_000
# measured ~4.5 kB a row (vector copy, Arrow records, posting arrays): 50k rows held ~200 MB more
# RSS than 5k at 1M memories (/work/notes/35.md); 20k rows: ~90 MB at most per store
TOTAL_ROWS = 20_000
_NEVER = np.iinfo(np.int64).max


@dataclass
class Snapshot:
    """One filtered scope at one cache generation (never changed once built)."""

    generation: int
    table: pa.Table                     # the scope's rows: id, scope_key, _fusion columns, record columns
    ids: list[str]
    doc_len: np.ndarray
    valid_at: np.ndarray
    slot_family: list[str | None]
    episode_key: list[str | None]       # extraction_run_id: the add() call that stored the memory
    time_stated: np.ndarray             # valid_from given (not the storage time)
    conv_group: np.ndarray              # fusion.conversation_groups of episode_key
    conv_dot: np.ndarray                # v . its conversation's mean (fusion.conversation_dot), every row
    valid_us: np.ndarray                # valid_at in microseconds (the order said, for the neighbours)
    neighbours: Neighbours | None       # fusion.neighbour_context of the memories added alone
    neighbour_key: tuple                # (window, max gap) they were built for
    person_words: list[str | None]      # ' ' || lower(trim(attributed_to)) || ' '
    expires_us: np.ndarray              # _NEVER when not expiring
    vecs: np.ndarray                    # unit vectors, (n, dim) float32
    kw: dict[str, tuple[np.ndarray, np.ndarray]]    # term -> (rows, tf)
    ent: dict[str, np.ndarray]                      # entity id -> rows

    _records: dict[str, dict[str, Any]] | None = None
    # (key, value) pairs of user_id / agent_id / run_id the filter requires: a later write to a scope
    # they rule out leaves the snapshot valid (ScopeCache.unchanged_since); () for any scope
    identity: tuple[tuple[str, str], ...] = ()

    @property
    def n(self) -> int:
        return len(self.ids)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the records built on first use (a server's fronts rebuild their own)."""
        return dict(self.__dict__, _records=None)

    def records(self) -> dict[str, dict[str, Any]]:
        """id -> the memory's columns (no fusion columns), as run_search reads result rows; built on
        first use (an Arrow take and to_pylist per search cost ~0.7 ms on a LoCoMo-size scope)."""
        if self._records is None:
            rows = self.table.drop_columns([c for c in self.table.column_names if c.startswith("_")]).to_pylist()
            self._records = {r["id"]: r for r in rows}
        return self._records

    def scope(self, qtext: str, qvec: np.ndarray | None, now_us: int, neighbour_window: int = 0,
              neighbour_gap_us: float = float("inf")) -> tuple[Scope, pa.Table, np.ndarray | None]:
        """(Scope for fusion, the visible rows' table, the row map old -> new or None when every row
        is visible) at `now_us`; cosines with qvec as load_scope computes them from the cache."""
        live = self.expires_us > now_us
        keep = None if live.all() else np.flatnonzero(live)
        person = np.array([1.0 if w is not None and w in qtext else 0.0 for w in self.person_words], np.float64)
        cos = None
        if qvec is not None:
            q = np.asarray(qvec, np.float32)
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            cos = self.vecs @ q
        if keep is None:
            # no neighbours without the semantic channel, as load_scope (the episode reads them too)
            nb = None if cos is None else self.neighbours if self.neighbour_key == (neighbour_window, neighbour_gap_us) \
                else _neighbours(self.vecs, self.conv_group, self.valid_us, self.ids, neighbour_window,
                                 neighbour_gap_us)
            return Scope(ids=self.ids, doc_len=self.doc_len, valid_at=self.valid_at, slot_family=self.slot_family,
                         person=person, cosine=cos, episode_key=self.episode_key,
                         time_stated=self.time_stated, conv_group=self.conv_group,
                         conv_dot=self.conv_dot, neighbours=nb, vecs=self.vecs), self.table, None
        row_map = np.full(self.n + 1, -1, np.int64)
        row_map[keep] = np.arange(len(keep))
        group = conversation_groups([self.episode_key[i] for i in keep])
        ids = [self.ids[i] for i in keep]
        scope = Scope(ids=ids, doc_len=self.doc_len[keep], valid_at=self.valid_at[keep],
                      slot_family=[self.slot_family[i] for i in keep], person=person[keep],
                      episode_key=[self.episode_key[i] for i in keep], time_stated=self.time_stated[keep],
                      conv_group=group, conv_dot=conversation_dot(self.vecs[keep], group),
                      neighbours=None if cos is None else _neighbours(self.vecs[keep], group, self.valid_us[keep],
                                                                      ids, neighbour_window, neighbour_gap_us),
                      cosine=None if cos is None else cos[keep], vecs=None if cos is None else self.vecs[keep])
        return scope, self.table.take(pa.array(keep)), row_map

    def hits(self, terms: list[str], entities: dict[str, float], row_map: np.ndarray | None) -> Hits:
        """The postings of these terms and entity ids, as candidates.match_hits returns them."""
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, np.float64)
        kw_parts = [(self.kw[t], i) for i, t in enumerate(terms) if t in self.kw]
        kw_row = np.concatenate([r for (r, _tf), _i in kw_parts]) if kw_parts else empty_i
        kw_tf = np.concatenate([tf for (_r, tf), _i in kw_parts]) if kw_parts else empty_f
        kw_term = np.concatenate([np.full(len(r), i, np.int64) for (r, _tf), i in kw_parts]) if kw_parts else empty_i
        ent_ids = list(entities)
        ent_parts = [(self.ent[e], i) for i, e in enumerate(ent_ids) if e in self.ent]
        ent_row = np.concatenate([r for r, _i in ent_parts]) if ent_parts else empty_i
        ent_idx = np.concatenate([np.full(len(r), i, np.int64) for r, i in ent_parts]) if ent_parts else empty_i
        if row_map is not None:
            kw_row, ent_row = row_map[kw_row], row_map[ent_row]
            k, e = kw_row >= 0, ent_row >= 0
            kw_row, kw_term, kw_tf, ent_row, ent_idx = kw_row[k], kw_term[k], kw_tf[k], ent_row[e], ent_idx[e]
        return Hits(terms=list(terms), kw_row=kw_row, kw_term=kw_term, kw_tf=kw_tf,
                    ent_match=np.array([entities[e] for e in ent_ids], np.float64), ent_row=ent_row,
                    ent_idx=ent_idx, ent_ids=ent_ids)


class SnapshotStore:
    """The snapshots of one store (one per scope cache), least recently used first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snaps: collections.OrderedDict[Any, Snapshot] = collections.OrderedDict()
        self.seen: collections.OrderedDict[Any, int] = collections.OrderedDict()
        self.stats: collections.Counter = collections.Counter()

    def lookup(self, key: Any, generation: int, still_valid: Callable[[int], bool] | None = None) -> Snapshot | None:
        """The filter's snapshot if it is of `generation`, or of an older one that `still_valid`
        vouches for (nothing it covers changed since: ScopeCache.unchanged_since)."""
        with self.lock:
            snap = self.snaps.get(key)
        if snap is None or (snap.generation != generation
                            and (still_valid is None or not still_valid(snap.generation))):
            return None
        with self.lock:
            if key in self.snaps:
                self.snaps.move_to_end(key)
            self.stats["hits"] += 1
        return snap

    def peek(self, key: Any) -> Snapshot | None:
        """The filter's snapshot of whatever generation, or None (no use counted)."""
        with self.lock:
            return self.snaps.get(key)

    def want(self, key: Any, generation: int, still_valid: Callable[[int], bool] | None = None) -> bool:
        """True when this filter was searched before in this generation, or in an older one that
        `still_valid` vouches for (worth a snapshot)."""
        with self.lock:
            seen = self.seen.get(key)
        if seen is not None and (seen == generation or (still_valid is not None and still_valid(seen))):
            return True
        with self.lock:
            self.seen[key] = generation
            self.seen.move_to_end(key)
            while len(self.seen) > 4096:
                self.seen.popitem(last=False)
            return False

    def put(self, key: Any, snap: Snapshot) -> None:
        with self.lock:
            self.snaps[key] = snap
            self.snaps.move_to_end(key)
            self.stats["builds"] += 1
            total = sum(s.n for s in self.snaps.values())
            while total > TOTAL_ROWS and len(self.snaps) > 1:
                _, old = self.snaps.popitem(last=False)
                total -= old.n


_STORES: weakref.WeakKeyDictionary[Any, SnapshotStore] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def snapshots_for(cache: Any) -> SnapshotStore:
    """The snapshot store that goes with a scope cache (created on first use)."""
    with _STORES_LOCK:
        store = _STORES.get(cache)
        if store is None:
            store = _STORES[cache] = SnapshotStore()
        return store


def _neighbours(vecs: np.ndarray, group: np.ndarray, valid_us: np.ndarray, ids: list[str], window: int,
                gap_us: float) -> Neighbours | None:
    order = neighbour_order(group, valid_us, ids)
    return neighbour_context(vecs, order, window, valid_us[order], gap_us)


def build_snapshot(db: Database, *, where: str, params: dict[str, Any], posting_scope: str, posting_scope_e: str,
                   scope_params: dict[str, Any], generation: int, neighbour_window: int = 0,
                   neighbour_gap_us: float = float("inf")) -> Snapshot | None:
    """Read the scope (two statements) and its vectors from the scope cache; None when the scope is
    larger than MAX_ROWS or the cache does not hold every vector."""
    if db.scope_cache.max_rows <= 0:
        return None
    # as load_scope: a store larger than the cache's budget reads the vectors with the rows (one
    # scan) rather than loading the scope into the cache first (1M store: build 17 -> ~12 ms CPU)
    from_cache = db.scope_cache.fits_store is not False
    table = db.arrow("snapshot_scope", params, sql=load_sql("queries/snapshot_scope").replace("/*WHERE*/", where)
                     .replace("/*VECTOR*/", "" if from_cache else ", m.embedding AS _vector"))
    n = table.num_rows
    if n > MAX_ROWS:
        return None
    ids = table.column("id").to_pylist()
    if from_cache:
        vecs, found = db.scope_cache.vectors_for(db, table.column("scope_key").to_pylist(), ids)
        if not found.all():
            return None
    else:
        flat = table.column("_vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = unit_rows(np.asarray(flat, np.float32).reshape(n, int(db.dim)))
        table = table.drop_columns(["_vector"])
    col = lambda name: table.column(name).to_numpy(zero_copy_only=False)  # noqa: E731
    exp = table.column("_expires_us").fill_null(_NEVER).to_numpy(zero_copy_only=False).astype(np.int64)
    group = conversation_groups(table.column("_episode_key"))
    valid_us = col("_valid_at_us").astype(np.int64)
    post = db.arrow("snapshot_postings", scope_params, sql=load_sql("queries/snapshot_postings")
                    .replace("/*POSTING_SCOPE*/", posting_scope).replace("/*POSTING_SCOPE_E*/", posting_scope_e))
    kw, ent = group_postings(post, table.column("id"))
    return Snapshot(generation=generation, table=table, ids=ids, doc_len=col("_doc_len").astype(np.float64),
                    valid_at=np.floor_divide(col("_valid_at_us"), 1_000_000),
                    slot_family=table.column("_slot_family").to_pylist(),
                    episode_key=table.column("_episode_key").to_pylist(),
                    time_stated=col("_time_stated").astype(bool),
                    conv_group=group, conv_dot=conversation_dot(vecs, group), valid_us=valid_us,
                    neighbours=_neighbours(vecs, group, valid_us, ids, neighbour_window, neighbour_gap_us),
                    neighbour_key=(neighbour_window, neighbour_gap_us),
                    person_words=table.column("_person_words").to_pylist(), expires_us=exp, vecs=vecs,
                    kw=kw, ent=ent)


def group_postings(post: pa.Table, ids: pa.ChunkedArray | pa.Array
                   ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray]]:
    """Postings (kind, memory_id, key, tf) grouped by key as row numbers into `ids` (postings of
    memories not in `ids` dropped; a key's rows keep the postings' order): ({term: (rows, tf)},
    {entity id: rows}). Vectorised: a Python loop per posting cost ~10 ms of a 1,000-memory scope's
    snapshot (~9k postings).

    >>> post = pa.table({"kind": [0, 0, 1, 0], "memory_id": ["b", "a", "a", "zz"], "key": ["tea", "tea", "e1", "tea"],
    ...                  "tf": [2.0, 1.0, 1.0, 1.0]})
    >>> kw, ent = group_postings(post, pa.array(["a", "b"]))
    >>> kw["tea"][0].tolist(), kw["tea"][1].tolist(), ent["e1"].tolist()
    ([1, 0], [2.0, 1.0], [0])
    """
    rows = pc.index_in(post.column("memory_id"), value_set=ids)
    kinds = post.column("kind")
    out: list[dict] = []
    for kind in (0, 1):
        sel = pc.and_(pc.equal(kinds, kind), pc.is_valid(rows))
        r = pc.filter(rows, sel).to_numpy(zero_copy_only=False).astype(np.int64)
        keys = pc.filter(post.column("key"), sel).combine_chunks().dictionary_encode()
        code = keys.indices.to_numpy(zero_copy_only=False)
        names = keys.dictionary.to_pylist()
        order = np.argsort(code, kind="stable")
        sc = code[order]
        starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if len(sc) else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], len(sc)]
        rs = r[order]
        if kind == 0:
            tfs = pc.filter(post.column("tf"), sel).to_numpy(zero_copy_only=False).astype(np.float64)[order]
            out.append({names[c]: (rs[a:b], tfs[a:b]) for c, a, b in zip(sc[starts].tolist(), starts.tolist(),
                                                                         ends.tolist())})
        else:
            out.append({names[c]: rs[a:b] for c, a, b in zip(sc[starts].tolist(), starts.tolist(), ends.tolist())})
    return out[0], out[1]
