"""An in-process copy of each scope's current memories (id, hash, text, unit vector, expiration),
so that add() de-duplicates against the whole scope without scanning the memories table.

Reading a scope's vectors costs ~8 ms at 100k stored memories (the rows are spread over the
file); the same check on this copy costs ~0.1 ms. The copy is only trusted while nothing but
add() has written the store:

- every add updates its scope's entry as its writer stores it (memstore/store/writer.py); the
  COMMIT records the files (`after_commit`), a ROLLBACK drops everything;
- any other transaction that commits (update, delete, expire, erase, ingest, import ...) and any
  write statement outside a transaction drops every entry (`invalidate`);
- for a store file, every check also compares the file's and its WAL's size and mtime with what
  they were after our last add: a write behind the API's back (another cursor, raw SQL) changes
  them, and the whole copy is dropped. DuckDB lets one process at a time write a file, so no
  other process can change it while this one holds it open.

The first miss in a process loads every scope at once when the store holds at most `max_rows`
current memories (one scan, ~0.2 s at 100k); later misses, or larger stores, load one scope and
evict the least recently used scopes beyond `max_rows`.

>>> import datetime as dt
>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=2, embedder="t")
>>> entry = db.scope_cache.entry(db, "u=a|a=|r=")
>>> entry.size, entry.nearest([[1.0, 0.0]], dt.datetime(2030, 1, 1))
(0, [])
"""
from __future__ import annotations

import collections
import datetime as dt
import os
import threading
import time
from typing import Any, Protocol

import numpy as np

from memstore.core.identity import scope_matches


class Database(Protocol):
    """What the cache reads from the store it belongs to (`memstore.store.database.Database` is
    one); the cache knows the store only through this, so the store's door does not depend on it
    the other way round."""

    @property
    def path(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def files_checked(self) -> bool: ...

    def scalar(self, sql: str, params: Any = None) -> Any: ...

    def arrow(self, name: str, params: Any = None, *, sql: str | None = None) -> Any: ...

    def rows(self, name: str, params: Any = None, *, sql: str | None = None,
             writes: bool = False) -> list[tuple[Any, ...]]: ...

CHANGE_LOG = 4096          # generations whose changed scopes are remembered (unchanged_since)
NOT_EXPIRING = np.datetime64("9999-12-31T00:00:00", "us")
# Python objects per cached memory beyond its vector and text: id and hash strings (~140 bytes),
# list slots, by_id / by_hash dict entries and tuples, expiry and alive (~200 bytes, tracemalloc).
ROW_OVERHEAD = 400


class ScopeEntry:
    """The current memories of one scope: parallel columns with room to grow, and an alive mask."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.hashes: list[str] = []
        self.texts: list[str] = []
        self.froms: list[dt.datetime | None] = []     # each row's valid_from (a batched supersede closes from it)
        self.vecs = np.zeros((0, dim), np.float32)
        self.expires = np.zeros(0, "datetime64[us]")
        self.alive = np.zeros(0, bool)
        # Values are tuples, not lists: a tuple of ints is not tracked by Python's cyclic GC, where
        # a list per hash was (100k more tracked objects at 100k stored memories).
        self.by_hash: dict[str, tuple[int, ...]] = {}
        self.by_id: dict[str, int] = {}
        self.by_slot: dict[str, tuple[tuple[int, dt.datetime], ...]] = {}  # subject|slot -> holders (row, valid_from)
        self.text_bytes = 0

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """What this entry holds in memory, estimated: the vector rows allocated, texts, ROW_OVERHEAD a row."""
        return self.vecs.nbytes + self.text_bytes + ROW_OVERHEAD * len(self.ids)

    def extend(self, ids: list[str], hashes: list[str], texts: list[str], vecs: Any, expires: Any,
               slots: list[tuple[str | None, Any]] | None = None, froms: list[Any] | None = None) -> None:
        """Append rows (vectors are normalised here); `slots[i]` is (subject|slot key the memory
        holds or None, when it holds it from); `froms[i]` the row's stored valid_from (default:
        the slot's since, which is what add() stores)."""
        if froms is None:
            froms = [since for _, since in slots] if slots is not None else [None] * len(ids)
        fresh = [j for j, mid in enumerate(ids) if mid not in self.by_id]   # a load may already hold them
        if len(fresh) < len(ids):
            ids, hashes, texts = ([xs[j] for j in fresh] for xs in (ids, hashes, texts))
            vecs, expires = [vecs[j] for j in fresh], [expires[j] for j in fresh]
            slots = [slots[j] for j in fresh] if slots is not None else None
            froms = [froms[j] for j in fresh]
        n0, k = len(self.ids), len(ids)
        if k == 0:
            return
        v = np.asarray(vecs, np.float32).reshape(k, self.dim)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        exp = np.array([NOT_EXPIRING if e is None else np.datetime64(e, "us") for e in expires], "datetime64[us]") \
            if not isinstance(expires, np.ndarray) else expires.astype("datetime64[us]")
        if n0 + k > len(self.vecs):      # grow by doubling: an add appends without copying the scope
            cap = n0 + k if n0 == 0 else max(16, 2 * (n0 + k))    # a load takes what it holds, no more
            self.vecs = _grow(self.vecs, cap)
            self.expires = _grow(self.expires, cap)
            self.alive = _grow(self.alive, cap)
        self.vecs[n0:n0 + k] = v
        self.expires[n0:n0 + k] = exp
        self.alive[n0:n0 + k] = True
        for j, (mid, h) in enumerate(zip(ids, hashes)):
            self.by_hash[h] = self.by_hash.get(h, ()) + (n0 + j,)
            self.by_id[mid] = n0 + j
        for j, (key, since) in enumerate(slots or ()):
            if key is not None:
                self.by_slot[key] = self.by_slot.get(key, ()) + ((n0 + j, since),)
        self.ids += ids
        self.hashes += hashes
        self.texts += texts
        self.froms += froms
        self.text_bytes += sum(len(t) for t in texts) + 49 * k

    def current(self, mid: str) -> int | None:
        """The row of memory `mid` if this copy holds it as current (not superseded), else None."""
        j = self.by_id.get(mid)
        return j if j is not None and self.alive[j] else None

    def drop(self, ids: list[str]) -> None:
        """Mark memories as no longer current (superseded)."""
        for mid in ids:
            j = self.by_id.get(mid)
            if j is not None:
                self.alive[j] = False

    def slot_holders(self, keys: Any, now: dt.datetime) -> list[tuple[str, str, Any]]:
        """(id, key, valid_from) of current, unexpired memories holding one of the subject|slot keys
        (what sql/queries/current_slot_memories.sql reads from the store)."""
        stamp = np.datetime64(now, "us")
        return [(self.ids[j], key, since) for key in keys for j, since in self.by_slot.get(key, ())
                if self.alive[j] and self.expires[j] > stamp]

    def _current(self, now: dt.datetime) -> np.ndarray:
        n = self.size
        return self.alive[:n] & (self.expires[:n] > np.datetime64(now, "us"))

    def find_hashes(self, hashes: list[str], now: dt.datetime) -> dict[str, str]:
        """{hash: id} of current memories with one of the given content hashes."""
        out: dict[str, str] = {}
        stamp = np.datetime64(now, "us")
        for h in hashes:
            for j in self.by_hash.get(h, ()):
                if self.alive[j] and self.expires[j] > stamp:
                    out.setdefault(h, self.ids[j])
                    break
        return out

    def nearest(self, vectors: Any, now: dt.datetime, k: int = 3) -> list[tuple[int, str, float, str]]:
        """For each query vector its k most similar current memories as (idx, id, cosine, text),
        most similar first."""
        if self.size == 0 or len(vectors) == 0:
            return []
        q = np.asarray(vectors, np.float32).reshape(len(vectors), self.dim)
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        rows = np.flatnonzero(self._current(now))
        if len(rows) == 0:
            return []
        sims = self.vecs[rows] @ q.T
        out = []
        for j in range(len(q)):
            col = sims[:, j]
            top = np.argpartition(-col, k - 1)[:k] if len(col) > k else np.arange(len(col))
            for i in top[np.argsort(-col[top])]:
                out.append((j, self.ids[rows[i]], float(col[i]), self.texts[rows[i]]))
        return out


def _grow(arr: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((cap, *arr.shape[1:]), arr.dtype)
    out[:len(arr)] = arr
    return out


class ScopeCache:
    """The ScopeEntry objects of one open store. Its owner (the Runtime of a Memory) creates it
    with the configured size (`scope_cache_rows`) and hands it to its Database, which reports
    every change it cannot follow (`invalidate`, `after_commit`); the writers keep it current as
    they store adds. A second Memory on the same file has its own: it sees the first one's
    commits through the files' fingerprint."""

    def __init__(self, max_rows: int = 200_000, max_bytes: int = 256 << 20) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes      # config `scope_cache_mb`: scopes beyond it are evicted, oldest first
        self.entries: collections.OrderedDict[str, ScopeEntry] = collections.OrderedDict()
        self.known_entities: set[str] = set()
        # scope -> (created_at, id) of the messages add() stored, oldest first (exact while cached)
        self.add_messages: dict[str, list[tuple[Any, str]]] = {}
        self.messages_preloaded = False
        self.lock = threading.RLock()
        self.preloaded = False                   # one full load per process at most
        # does the whole store fit the budget (None: not known yet)? When it does not, search reads
        # a cold scope's vectors in its own scan instead of loading the scope here first
        self.fits_store: bool | None = None
        self.search_reload_at = -float("inf")    # when search last allowed a full reload
        self.fingerprint: tuple[Any, ...] | None = None
        self.stats: collections.Counter[str] = collections.Counter()
        # bumped by every change this cache sees (add, invalidation, a write behind our back):
        # derived copies (the search snapshots, memstore/retrieval/snapshot.py) are valid while it
        # holds, or while no change since names a scope they cover (`unchanged_since`)
        self.generation = 0
        # (generation, the scope keys that commit changed, or None: any) of the last CHANGE_LOG bumps
        self.changes: collections.deque[tuple[int, frozenset[str] | None]] = collections.deque(maxlen=CHANGE_LOG)
        self._verified: dict[tuple[Any, ...], int] = {}    # (since, identity) -> the generation checked up to

    def _bump(self, scope_keys: Any = None) -> None:
        self.generation += 1
        self.changes.append((self.generation, None if scope_keys is None else frozenset(scope_keys)))

    def unchanged_since(self, db: Database, since: int, identity: tuple[tuple[str, str], ...] | None) -> bool:
        """Did no change since generation `since` touch a scope whose memories a filter requiring
        `identity` ((key, value) pairs of user_id / agent_id / run_id; None or empty: any scope)
        can match? A change that did not say its scopes (None) touches every scope; changes older
        than the log are not known, so the answer is then no.

        >>> from memstore.store.database import Database
        >>> db = Database(":memory:", dim=2, embedder="t")
        >>> c = db.scope_cache; g = c.current_generation(db)
        >>> c.after_commit(db, {"u=bo|a=|r="})
        >>> c.unchanged_since(db, g, (("user_id", "ana"),)), c.unchanged_since(db, g, (("user_id", "bo"),))
        (True, False)
        """
        with self.lock:
            self._check_files(db)
            now = self.generation
            if since == now:
                return True
            if since > now or not identity:
                return False
            memo = (since, identity)
            start = self._verified.get(memo, since)
            if start == now:
                return True
            if not self.changes or self.changes[0][0] > start + 1:
                return False                      # the log does not reach back that far
            for gen, keys in reversed(self.changes):
                if gen <= start:
                    break
                if keys is None or any(scope_matches(k, identity) for k in keys):
                    return False
            if len(self._verified) > 4096:
                self._verified.clear()
            self._verified[memo] = now
            return True

    # -- validity ---------------------------------------------------------------------------------
    def invalidate(self) -> None:
        with self.lock:
            self.entries.clear()
            self.known_entities.clear()
            self.add_messages.clear()
            self.fingerprint = None
            self._bump()
            self.stats["invalidations"] += 1

    def _check_files(self, db: Database) -> None:
        """Drop everything when the store files changed since our last add (a write we did not see).
        Inside a transaction whose BEGIN found the files unchanged there is nothing to look at: the
        transaction reads its snapshot of that moment (and stat() cost up to 0.2 ms a call here)."""
        if db.files_checked:
            return
        fp = file_fingerprint(db.path)
        if fp is not None and fp != self.fingerprint:
            if self.fingerprint is not None or self.entries:
                self.entries.clear()
                self.known_entities.clear()
                self.add_messages.clear()
                self.stats["file_changes"] += 1
            self.fingerprint = fp
            self._bump()

    def changed(self, db: Database, scope_keys: set[str]) -> None:
        """A commit changed these scopes' memories (and maybe entities) and nothing else the cache
        holds: drop their copies only, and record the files as that commit left them."""
        with self.lock:
            for key in scope_keys:
                self.entries.pop(key, None)
                self.add_messages.pop(key, None)
            self.known_entities.clear()          # a delete may remove entities no memory names any more
            self.stats["scope_changes"] += 1
            self.after_commit(db, scope_keys)

    def files_unchanged(self, db: Database) -> bool:
        """Are the store files as this cache last recorded them (no write it did not see)?"""
        fp = file_fingerprint(db.path)
        return fp is None or fp == self.fingerprint

    def after_commit(self, db: Database, scope_keys: Any = None) -> None:
        """Record the files as our own commit left them; `scope_keys`: the scopes it changed (None:
        not said, any scope)."""
        with self.lock:
            self.fingerprint = file_fingerprint(db.path)
            self._bump(scope_keys)

    def current_generation(self, db: Database) -> int:
        """The generation after checking the store files (a write we did not see bumps it)."""
        with self.lock:
            self._check_files(db)
            return self.generation

    # -- lookups ----------------------------------------------------------------------------------
    def entry(self, db: Database, scope_key: str) -> ScopeEntry:
        """The scope's entry, loaded from the store on a miss."""
        with self.lock:
            self._check_files(db)
            e = self.entries.get(scope_key)
            if e is not None:
                self.entries.move_to_end(scope_key)
                self.stats["hits"] += 1
                return e
            self.stats["misses"] += 1
            if self.max_rows == 0:          # cache off: read the scope, keep nothing
                self._load(db, scope_key)
                return self.entries.pop(scope_key, None) or ScopeEntry(db.dim)
            if not self.preloaded:
                self.preloaded = True
                total = db.scalar("SELECT count(*) FROM memories WHERE invalidated_at IS NULL")
                self.fits_store = total <= self.max_rows and total * self.row_bytes(db.dim) <= self.max_bytes
                if self.fits_store:
                    self._load(db, None)
                    return self.entries.setdefault(scope_key, ScopeEntry(db.dim))
            self._load(db, scope_key)
            e = self.entries.setdefault(scope_key, ScopeEntry(db.dim))
            self._evict()
            return e

    def nearest(self, db: Database, scope_key: str, vectors: Any, now: dt.datetime, k: int) -> list[tuple[int, str, float, str]]:
        """`ScopeEntry.nearest` under the cache lock (callers outside the store's write lock)."""
        with self.lock:
            return self.entry(db, scope_key).nearest(vectors, now, k)

    # -- read side (search) ---------------------------------------------------------------------------
    def vectors_for(self, db: Database, scope_keys: Any, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors of the memories (scope_keys[i], ids[i]) as a (len(ids), dim) matrix and a
        mask of the rows found (a superseded memory keeps its vector: embeddings change only through
        update(), which drops the cache). Scopes not cached are loaded; with the cache off
        (max_rows 0) nothing is found, so the caller reads the vectors from the store.

        >>> from memstore.store.database import Database
        >>> db = Database(":memory:", dim=2, embedder="t")
        >>> vecs, found = db.scope_cache.vectors_for(db, ["u=a|a=|r="], ["nope"])
        >>> vecs.shape, found.tolist()
        ((1, 2), [False])
        """
        out = np.zeros((len(ids), db.dim), np.float32)
        found = np.zeros(len(ids), bool)
        if self.max_rows == 0 or not ids:
            return out, found
        keys = np.asarray(scope_keys, dtype=object)
        with self.lock:
            self._check_files(db)
            if not self.entries and self.preloaded and time.monotonic() - self.search_reload_at > 30.0:
                # everything was dropped (a write other than add, e.g. a re-cluster): reload the
                # whole store once, as at first use, rather than one scope per search (at most
                # every 30 s, so a run of deletes between searches cannot make each search reload)
                self.preloaded = False
                self.search_reload_at = time.monotonic()
            for key in dict.fromkeys(keys.tolist()):
                e = self.entry(db, key)
                rows = np.flatnonzero(keys == key)
                idx = np.array([e.by_id.get(ids[r], -1) for r in rows], np.int64)
                ok = idx >= 0
                out[rows[ok]] = e.vecs[idx[ok]]
                found[rows[ok]] = True
            self.stats["vector_reads"] += 1
        return out, found

    def _load(self, db: Database, scope_key: str | None) -> None:
        table = db.arrow("queries/cache_all_memories") if scope_key is None else \
            db.arrow("queries/cache_scope_memories", {"scope_key": scope_key})
        if table.num_rows == 0:
            return
        scopes = table.column("scope_key").to_numpy(zero_copy_only=False)
        vecs = table.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, db.dim)
        exp = table.column("expiration_date").to_numpy(zero_copy_only=False).astype("datetime64[us]")
        exp[np.isnat(exp)] = NOT_EXPIRING
        ids, hashes, texts = (table.column(c).to_pylist() for c in ("id", "hash", "memory"))
        slots = list(zip(table.column("slot_key").to_pylist(), table.column("slot_from").to_pylist()))
        froms = table.column("valid_from").to_pylist()
        bounds = np.flatnonzero(scopes[1:] != scopes[:-1]) + 1      # rows come ordered by scope
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(scopes)]):
            e = self.entries.setdefault(str(scopes[lo]), ScopeEntry(db.dim))
            e.extend(ids[lo:hi], hashes[lo:hi], texts[lo:hi], vecs[lo:hi], exp[lo:hi], slots[lo:hi], froms[lo:hi])

    @staticmethod
    def row_bytes(dim: int) -> int:
        """Estimated bytes a cached memory takes (vector, ~100 characters of text, overhead)."""
        return 4 * dim + 150 + ROW_OVERHEAD

    @property
    def nbytes(self) -> int:
        """Estimated bytes held by every cached scope (what `max_bytes` bounds)."""
        with self.lock:
            return sum(e.nbytes for e in self.entries.values())

    def _evict(self) -> None:
        """Drop least recently used scopes beyond max_rows or max_bytes (the newest one stays)."""
        total = sum(e.size for e in self.entries.values())
        size = sum(e.nbytes for e in self.entries.values())
        while (total > self.max_rows or size > self.max_bytes) and len(self.entries) > 1:
            _, old = self.entries.popitem(last=False)
            total -= old.size
            size -= old.nbytes
            self.stats["evictions"] += 1
            self.fits_store = False

    def messages_to_prune(self, db: Database, scope_key: str, new: list[tuple[Any, str]], keep: int) -> list[str]:
        """Ids of add()'s messages beyond the newest `keep` once `new` (created_at, id) is stored;
        the new ones count, so keep=0 removes them too (as the pruning query does)."""
        with self.lock:
            self._check_files(db)
            cur = self.add_messages.get(scope_key)
            if cur is None:
                preload = not self.messages_preloaded and self.max_rows > 0
                self.messages_preloaded = preload or self.messages_preloaded
                rows = db.rows("queries/cache_add_messages", {"scope_key": None if preload else scope_key})
                if preload and len(rows) > self.max_rows:
                    rows = [r for r in rows if r[0] == scope_key]
                fresh = {mid for _, mid in new}    # already visible to this transaction's read
                for sk, mid, created in rows:
                    if mid not in fresh:
                        self.add_messages.setdefault(sk, []).append((created, mid))
                cur = self.add_messages.setdefault(scope_key, [])
            merged = sorted(cur + new)
            if self.max_rows == 0:          # cache off: nothing is kept for the next add
                self.add_messages.pop(scope_key, None)
            return [mid for _, mid in merged[:max(0, len(merged) - keep)]]

    # -- the writers keep it current ------------------------------------------------------------------
    def follow_messages(self, scope_key: str, new: list[tuple[Any, str]], pruned: list[str]) -> None:
        """An add stored `new` (created_at, id) messages and pruned `pruned` (memstore/store/writer.py
        follows each add this way inside its transaction; the COMMIT records the files, a ROLLBACK
        drops everything)."""
        with self.lock:
            if scope_key in self.add_messages:
                gone = set(pruned)
                merged = dict((mid, when) for when, mid in self.add_messages[scope_key] + new)
                self.add_messages[scope_key] = sorted((when, mid) for mid, when in merged.items() if mid not in gone)


def file_fingerprint(path: str) -> tuple[Any, ...] | None:
    """(size, mtime) of the store file and its WAL; None for an in-memory store."""
    if path == ":memory:":
        return None
    out: list[Any] = []
    for p in (path, path + ".wal"):
        try:
            st = os.stat(p)
            out += [st.st_size, st.st_mtime_ns]
        except FileNotFoundError:
            out += [None, None]
    return tuple(out)
