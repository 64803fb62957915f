"""Searches answered in a server's front processes from replicated search snapshots.

With `memstore serve --fronts N` a front embeds the query; before this module the owner then ran
the whole search. Now a front keeps copies of the owner's search snapshots
(memstore/retrieval/snapshot.py: a filtered scope's rows, postings and unit vectors, valid for one
scope-cache generation) and runs the same fusion code on them (`search.snapshot_search`). Per
search the owner still answers one small message, so that tokens and writes stay exact:

    front ── Snap(authorization, args, kwargs, vector, key, generation held) ──► owner
    owner: verify the token, confine the call as `search` does, compile its filter's key;
           same key, and no write since the copy's generation
           touched a scope the filter covers           ─► ("fresh",)     the front searches its copy
           otherwise: run the search as before       ─► ("searched", result, key, scope, snapshot)

The snapshot comes with a "searched" answer when the owner holds a current one for that filter
(built on a filter's second search in a generation, as for its own searches) that has outlived
SEND_AFTER more searches (under a stream of writes a copy would be stale before its use); the front
keeps it, least recently used first, up to snapshot.TOTAL_ROWS rows. Every write bumps the
generation before it is acknowledged and says which scopes it changed (a write that does not say
changes all), so a search after an acknowledged add, through any front, finds its scope's snapshot
stale and is run by the owner: read-your-writes holds; copies of other scopes stay in use
(ScopeCache.unchanged_since). With the audit of reads on, a "fresh" answer says whose read to
record (`("fresh", (token name, user_id, agent_id, run_id))`, or None when the sample skips it);
the front records what its copy returned and sends the rows to the owner in batches (`Reads`),
off the search's path (a search the owner runs is recorded by the owner). A revoked token is
refused by the owner on its next search. A scoped token's call is confined by the owner; the
front searches a copy only when the owner says the confined call's key is the copy's key, so a
token reads no other scope through a copy. Searches that snapshots do not serve (as_of,
show_expired, include_superseded, rerank, filters on the time or with lists, scopes larger than
snapshot.MAX_ROWS) go to the owner as before (`Search(...)`).

>>> call_key({"user_id": "ana", "top_k": 3}, ("where",)) == call_key({"user_id": "ana"}, ("who",))
True
>>> call_key({"user_id": "ana", "as_of": "2024-01-01"}, ("where",)) is None
True
"""
from __future__ import annotations

import collections
import logging
import pickle
import threading
import time
from typing import Any

from memstore.audit.read_rows import make_row, scope_of
from memstore.core.identity import IDENTITY_KEYS
from memstore.retrieval.search import filter_key_identity, snapshot_search
from memstore.retrieval.snapshot import Snapshot, SnapshotStore, snapshots_for
from memstore.server.owner_rpc import Reads, Search, Snap
from memstore.server.scoped_memory import confine

_NOT_SNAPPED = ("include_superseded", "show_expired", "rerank")
_ADMIN = "admin"                # a grant with no scope to confine to
_PACKED = 64                    # pickled snapshots the owner keeps for its fronts
SEND_AFTER = 4                  # a snapshot goes to the fronts once it outlived this many searches
READS_EVERY_S = 0.5             # a front sends the reads it recorded to the owner this often
READS_HELD = 10_000             # reads a front holds for the owner at most (more are counted as dropped)
log = logging.getLogger(__name__)


def snappable(kwargs: dict[str, Any], args: tuple = ()) -> bool:
    """Can a snapshot answer this search call, its filter aside (no as_of, show_expired,
    include_superseded or rerank)?"""
    query = args[0] if args else kwargs.get("query")
    return isinstance(query, str) and not any(kwargs.get(k) for k in _NOT_SNAPPED) and kwargs.get("as_of") is None


def call_key(kwargs: dict[str, Any], args: tuple = ()) -> Any:
    """The snapshot key of a `search(*args, **kwargs)` call, or None when its search never reads a
    snapshot (or its arguments are wrong: the owner's search then says so)."""
    return call_key_identity(kwargs, args)[0]


def call_key_identity(kwargs: dict[str, Any], args: tuple = ()) -> tuple[Any, tuple]:
    """(call_key, the scope identity its filter requires: retrieval/search.py scope_identity)."""
    from memstore.memory import merge_identity

    if not snappable(kwargs, args):
        return None, ()
    try:
        return filter_key_identity(merge_identity(kwargs.get("filters"), kwargs.get("user_id"),
                                                   kwargs.get("agent_id"), kwargs.get("run_id")))
    except Exception:
        return None, ()


class SnapshotDoor:
    """The owner's side of the `Snap` message (memstore/server/fronts.py OwnerDoor)."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.stats: collections.Counter = collections.Counter()
        self._packed: collections.OrderedDict[tuple, bytes] = collections.OrderedDict()
        self._asks: dict[tuple, int] = {}
        self._lock = threading.Lock()

    def answer(self, guarded: Any, args: tuple, kwargs: dict[str, Any], vector: Any, key: Any,
               held: int | None) -> tuple:
        grant = guarded.grant
        c_args, c_kwargs = guarded.admit("search", tuple(args), kwargs)     # the owner's confinement
        mine, identity = call_key_identity(c_kwargs, c_args)
        db = self.memory.db
        cache = db.scope_cache
        # the front's copy is current when no write since its generation touched a scope the
        # filter covers (writes to other scopes leave it valid)
        if mine is not None and held is not None and mine == key and cache.unchanged_since(db, held, identity):
            self.stats["fresh"] += 1
            return ("fresh", self._reader(grant, c_kwargs))
        self.stats["searched"] += 1
        s_kwargs = dict(kwargs)
        query = args[0] if args else s_kwargs.pop("query", None)
        result = guarded.search_with_vector(vector, query, *args[1:], **s_kwargs)
        data = None
        if mine is not None:
            snap = snapshots_for(db.scope_cache).peek(mine)
            if snap is not None and snap.generation != held \
                    and cache.unchanged_since(db, snap.generation, identity) and self._lasts(mine, snap.generation):
                data = self._pack(mine, snap)
        return ("searched", result, mine, _ADMIN if grant.admin else dict(grant.scope), data)

    def _reader(self, grant: Any, kwargs: dict[str, Any]) -> tuple | None:
        """Whose read the front records for a search from its copy (the audit of reads), or None."""
        reads = getattr(self.memory, "read_log", None)
        if reads is None or not reads.take():
            return None
        filters = {**(kwargs.get("filters") or {}), **{k: kwargs[k] for k in IDENTITY_KEYS if kwargs.get(k)}}
        return (_ADMIN if grant.admin else grant.name, *scope_of(filters))

    def _lasts(self, key: Any, generation: int) -> bool:
        """Has the filter's snapshot of this generation outlived SEND_AFTER searches? Under a steady
        stream of writes every generation is short: a copy sent would be stale before its first use
        (measured: 500 copies, 63 MB sent for 100 uses in 8 s), so those searches stay in the owner."""
        with self._lock:
            n = self._asks[(key, generation)] = self._asks.get((key, generation), 0) + 1
            if len(self._asks) > 4096:
                for old in list(self._asks)[:2048]:
                    del self._asks[old]
        self.stats["held_back"] += n <= SEND_AFTER
        return n > SEND_AFTER

    def _pack(self, key: Any, snap: Snapshot) -> bytes:
        """The snapshot pickled once for every front that asks (a bytes object pickles as a copy)."""
        with self._lock:
            data = self._packed.get((key, snap.generation))
            if data is not None:
                self._packed.move_to_end((key, snap.generation))
                self.stats["sent"] += 1
                self.stats["sent_bytes"] += len(data)
                return data
        t0 = time.process_time()
        data = pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._packed[(key, snap.generation)] = data
            while len(self._packed) > _PACKED:
                self._packed.popitem(last=False)
            self.stats["packed"] += 1
            self.stats["pack_ms"] += (time.process_time() - t0) * 1e3
            self.stats["sent"] += 1
            self.stats["sent_bytes"] += len(data)
        return data


class FrontSearch:
    """A front's searches: from its copy of the filter's snapshot when the owner says it is current,
    else through the owner."""

    def __init__(self, stages: Any, owner: Any) -> None:
        self.stages, self.owner = stages, owner
        self.snaps = SnapshotStore()
        self.stats: collections.Counter = collections.Counter()
        # authorization -> the scope its grant confines calls to (_ADMIN: none): to compute the key
        # of a scoped token's call as the owner will (the owner checks it on every search)
        self._scopes: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._reads: list[tuple] = []       # reads of searches answered here, for the owner
        self._reads_thread: threading.Thread | None = None

    def search(self, authorization: str, args: tuple, kwargs: dict[str, Any], vector: Any,
               embed_s: float = 0.0) -> Any:
        if not snappable(kwargs, args):
            self.stats["owner"] += 1
            return self.owner.call(Search(authorization, args, kwargs, vector))
        # key None (a scoped token's call before the front knows its scope, a filter no snapshot
        # serves): the owner searches, and its answer says the token's scope
        key = self._key(authorization, args, kwargs)
        held = self.snaps.peek(key) if key is not None else None
        reply = self.owner.call(Snap(authorization, args, kwargs, vector, key,
                                     held.generation if held is not None else None))
        if reply[0] == "fresh" and held is not None:
            self.snaps.lookup(key, held.generation)       # used: last to be dropped
            t0 = time.perf_counter()
            try:
                out = self._local(held, args, kwargs, vector, embed_s)
                self.stats["local"] += 1
                if len(reply) > 1 and reply[1] is not None:
                    self._record(reply[1], args, kwargs, out, (time.perf_counter() - t0) * 1e3 + embed_s * 1e3)
                return out
            except Exception:
                return self.owner.call(Search(authorization, args, kwargs, vector))
        _, result, okey, scope, data = reply
        self.stats["searched"] += 1
        with self._lock:
            self._scopes[authorization] = scope
            self._scopes.move_to_end(authorization)
            while len(self._scopes) > 1024:
                self._scopes.popitem(last=False)
        if data is not None and okey is not None:
            self.snaps.put(okey, pickle.loads(data))
        return result

    def _record(self, who: tuple, args: tuple, kwargs: dict[str, Any], out: Any, ms: float) -> None:
        """Hold the row of a search answered from a copy; a thread sends the rows to the owner."""
        try:
            found = out.get("results", [])
            channels = kwargs.get("channels", ("semantic", "keyword", "entity"))
            row = make_row("search", who[1:], args[0] if args else kwargs.get("query"), [str(r["id"]) for r in found],
                           [float(r["score"]) for r in found], (channels,) if isinstance(channels, str) else channels,
                           len(found), ms, (who[0], "front"), self.stages.config.audit.reads_query == "hash")
        except Exception:
            self.stats["reads_failed"] += 1
            return
        with self._lock:
            if len(self._reads) >= READS_HELD:
                self.stats["reads_dropped"] += 1
                return
            self._reads.append(row)
            if self._reads_thread is None:
                self._reads_thread = threading.Thread(target=self._send_reads, name="memstore-front-reads",
                                                      daemon=True)
                self._reads_thread.start()

    def _send_reads(self) -> None:
        """Send the held reads to the owner every READS_EVERY_S (the owner writes them)."""
        while True:
            time.sleep(READS_EVERY_S)
            with self._lock:
                rows, self._reads = self._reads, []
            if not rows:
                continue
            try:
                self.owner.call(Reads(tuple(rows)))
                self.stats["reads_sent"] += len(rows)
            except Exception as exc:
                self.stats["reads_lost"] += len(rows)
                log.warning("could not send %d reads to the owner: %s", len(rows), exc)

    def _key(self, authorization: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        with self._lock:
            scope = self._scopes.get(authorization)
        if scope is not None and scope != _ADMIN:
            try:
                kwargs = confine(kwargs, scope)
            except Exception:
                return None
        return call_key(kwargs, args)

    def _local(self, snap: Snapshot, args: tuple, kwargs: dict[str, Any], vector: Any, embed_s: float) -> Any:
        """Memory.search's defaults and checks, then the snapshot's search (retrieval/search.py)."""
        from memstore.core.checks import check_text

        query = args[0] if args else kwargs["query"]
        check_text(query, "query", allow_empty=True)
        cfg = self.stages.config
        top_k, threshold = kwargs.get("top_k"), kwargs.get("threshold")
        channels = kwargs.get("channels", ("semantic", "keyword", "entity"))
        return snapshot_search(snap, self.stages.nlp, cfg.search, query, vector,
                               top_k=cfg.top_k if top_k is None else top_k,
                               threshold=cfg.threshold if threshold is None else threshold,
                               explain=bool(kwargs.get("explain", False)),
                               channels=(channels,) if isinstance(channels, str) else tuple(channels),
                               weights=kwargs.get("weights"), timings={"embed": embed_s})
