"""Keep each scope's rows contiguous: re-cluster memories and postings by scope in bounded slices,
started by the store's commits (never by a read).

DuckDB skips row groups by their min/max (zonemaps) and, inside a row group, decompresses the
other columns only for the vectors of 2,048 rows where the filter matched. Rows arrive in time
order, so in append order one user's 1,000 memories touch every row group and nearly every vector
of memories and of the posting tables (7.5M keyword postings at 1M memories): measured at 100k
memories, a scoped search's posting statement costs 7.2 ms in append order and 1.9 ms sorted by
scope (bench/search_latency.py). Sorting by (user_id, agent_id, run_id) fixes that.

A pass sorts the store one slice at a time: a slice is a range of consecutive users holding at
most `slice_rows` memories (one user at least). Each slice is one short transaction that appends
a sorted copy of the range's rows to memories and both posting tables and deletes the originals
(sql/queries/admin/recluster_*.sql); the next checkpoint drops or merges the emptied row groups.
Slices run in user order, so after a pass each table is sorted again (rows added meanwhile form
the new tail). Readers never wait (MVCC: they read the snapshot before the slice's commit);
writers wait for one slice at most, not the pass; the pass pauses `pause` x a slice's duration
after each slice so searches keep most of the CPU; memory stays bounded by a slice, not the table.
The scope cache stays valid: a slice moves rows and changes no content.

Commit-triggered: `Maintenance.on_commit` (a listener of Database.transaction's commits) and
`check` (a store opened in append order) count the rows at most once every CHECK_EVERY_S seconds
(once a second while the table is below `min_rows`, so a store growing into it is seen soon) and
start a background pass when the unclustered tail passes `share` of a table of at least
`min_rows` memories. A store with an index on memories (the analyst HNSW index) is left to
`optimize()`, which runs every slice back to back (rebuilding the index around it).

>>> plan_slices([("a", 3), ("b", 4), ("c", 2), (None, 5)], slice_rows=6)
[('a', 'a', 3), ('b', 'c', 6), (None, None, 5)]
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.store.quoting import sql_ident
from memstore.store.sqlfiles import load_sql
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

log = logging.getLogger("memstore.recluster")

CLUSTERED_TABLES = ("memories", "keyword_postings", "entity_postings")
CHECK_EVERY_S = 60.0
SMALL_EVERY_S = 1.0             # below min_rows: a count(*) a second at most (an add costs none)
SLICE_ROWS = 50_000             # memories per slice (their postings come along: ~9x as many rows)


def plan_slices(users: list[tuple[str | None, int]], slice_rows: int) -> list[tuple[str | None, str | None, int]]:
    """Group (user_id, memories) in re-cluster order into (first user, last user, memories) slices
    of at most slice_rows memories (a larger user is a slice alone); NULL users are one slice."""
    out: list[tuple[str | None, str | None, int]] = []
    lo = hi = None
    n = 0
    for user, count in users:
        if user is None:
            continue
        if lo is not None and n + count > slice_rows:
            out.append((lo, hi, n))
            lo, n = None, 0
        lo = user if lo is None else lo
        hi, n = user, n + count
    if lo is not None:
        out.append((lo, hi, n))
    nulls = sum(c for u, c in users if u is None)
    if nulls:
        out.append((None, None, nulls))
    return out


def _slice_sql(name: str, table: str, lo: str | None) -> str:
    where = "user_id IS NULL" if lo is None else "user_id >= $lo AND user_id <= $hi"
    return load_sql(f"queries/admin/{name}").replace("/*TABLE*/", sql_ident(table)).replace("/*SLICE*/", where)


def recluster_slice(db: Database, lo: str | None, hi: str | None) -> None:
    """Sort one user range of memories and postings to the end of each table (one transaction)."""
    params = {} if lo is None else {"lo": lo, "hi": hi}
    # the scope cache follows: rows move, no memory changes (a commit by anyone else still drops it)
    with write_unit(db, "optimize", cache_follows=True):
        for table in CLUSTERED_TABLES:
            boundary = db.scalar(_slice_sql("recluster_boundary", table, lo))
            db.run(f"optimize:refill:{table}", params, sql=_slice_sql("recluster_copy", table, lo), writes=True)
            db.run(f"optimize:clear:{table}", dict(params, boundary=boundary),
                   sql=_slice_sql("recluster_clear", table, lo), writes=True)


def checkpoint_keeping_cache(db: Database) -> None:
    """CHECKPOINT (the emptied row groups go) and record the files as ours: it changes no row."""
    with db.write_lock, db.scope_cache.lock:
        unseen = not db.scope_cache.files_unchanged(db)
        db.run("queries/admin/checkpoint")
        if unseen:
            db.scope_cache.invalidate()
        else:
            db.scope_cache.after_commit(db)


def recluster_pass(db: Database, *, slice_rows: int = SLICE_ROWS, pause: float = 0.0,
                   stop: threading.Event | None = None) -> dict[str, Any]:
    """Sort the whole store by scope, slice by slice (see the module doc). Returns the memories
    sorted, the slices, the longest slice's seconds and the pass's seconds."""
    state = maintenance_for(db)
    with state.lock:
        state.active += 1               # its own commits start no second pass
    try:
        return _pass(db, slice_rows=slice_rows, pause=pause, stop=stop)
    finally:
        with state.lock:
            state.active -= 1


def _pass(db: Database, *, slice_rows: int, pause: float, stop: threading.Event | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    users = db.rows("queries/admin/recluster_plan")
    total = sum(n for _, n in users)
    slices = plan_slices(users, max(1, int(slice_rows)))
    longest = 0.0
    done = 0
    for lo, hi, _n in slices:
        if stop is not None and stop.is_set():
            break
        s = time.perf_counter()
        recluster_slice(db, lo, hi)
        took = time.perf_counter() - s
        longest = max(longest, took)
        done += 1
        if pause > 0 and stop is not None:
            stop.wait(pause * took)
        elif pause > 0:
            time.sleep(pause * took)
    complete = done == len(slices)
    if complete:
        with write_unit(db, "optimize", cache_follows=True):
            db.run("queries/set_clustered_rows", {"rows": total})
    checkpoint_keeping_cache(db)
    return {"memories": total, "slices": len(slices), "slices_done": done, "complete": complete,
            "longest_slice_s": round(longest, 3), "seconds": round(time.perf_counter() - t0, 3)}


def due(total: int, clustered: int, min_rows: int, share: float) -> bool:
    """Is a re-cluster due: a table of at least min_rows whose unclustered tail passes share?

    >>> due(total=100_000, clustered=0, min_rows=50_000, share=0.25), due(100_000, 90_000, 50_000, 0.25)
    (True, False)
    """
    return min_rows > 0 and total >= min_rows and total - min(clustered, total) > share * total


@dataclass
class Maintenance:
    """The re-cluster of one open store: when it last counted, the running pass (at most one)."""

    min_rows: int = 50_000
    share: float = 0.1
    slice_rows: int = SLICE_ROWS
    pause: float = 1.0                  # sleep this x a slice's duration after it (searches get the CPU)
    every_s: float = CHECK_EVERY_S

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.total_rows: int | None = None     # memories at the last count
        self.clustered_rows = 0                # of which sorted by the last pass
        self.counted_at = -float("inf")
        self.runs: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.active = 0                        # passes running now (background or optimize())

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a running pass (tests and benchmarks)."""
        t = self.thread
        if t is not None:
            t.join(timeout)

    def stop(self, timeout: float | None = 60.0) -> None:
        """Stop after the current slice (the store is closing)."""
        self.stop_event.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def count(self, db: Database, *, force: bool = False, small_exact: bool = False) -> int:
        """Memories in the store, counted at most once every `every_s` seconds (with `small_exact`,
        every SMALL_EVERY_S while the table is below min_rows; with force, now)."""
        now = time.monotonic()
        small = small_exact and (self.total_rows is None or self.total_rows < self.min_rows)
        every = min(SMALL_EVERY_S, self.every_s) if small else self.every_s
        if force or self.total_rows is None or now - self.counted_at >= every:
            self.total_rows = int(db.scalar("SELECT count(*) FROM memories") or 0)
            self.clustered_rows = int(db.meta("clustered_rows") or 0)
            self.counted_at = now
        return int(self.total_rows or 0)

    def on_commit(self, db: Database) -> bool:
        """Commit listener: start a background pass when one is due. Returns True if started."""
        return self.check(db)

    def check(self, db: Database) -> bool:
        """Start a background pass when one is due (see the module doc). Returns True if started."""
        if self.min_rows <= 0 or db.read_only or self.stop_event.is_set() or self.running() or self.active:
            return False
        total = self.count(db, small_exact=True)
        if not due(total, self.clustered_rows, self.min_rows, self.share):
            return False
        if db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE table_name = 'memories'"):
            return False            # rebuilding the analyst HNSW index takes minutes: left to optimize()
        with self.lock:
            if self.running():
                return False
            self.counted_at = time.monotonic()
            self.clustered_rows = total          # no second start while this pass runs
            self.thread = threading.Thread(target=self._work, args=(db,), name="memstore-recluster", daemon=True)
            self.thread.start()
        return True

    def _work(self, db: Database) -> None:
        try:
            out = recluster_pass(db, slice_rows=self.slice_rows, pause=self.pause, stop=self.stop_event)
            self.runs.append(out)
            self.count(db, force=True)
            log.info("re-cluster of %s: %s", db.path, out)
        except BaseException as exc:  # noqa: BLE001 - a background maintenance step must not crash anything
            self.error = exc
            log.warning("re-cluster of %s failed (%s: %s); searches stay correct, only slower",
                        db.path, type(exc).__name__, exc)


def maintenance_for(db: Database) -> Maintenance:
    """The store's Maintenance (a default one when its owner attached none)."""
    m = getattr(db, "maintenance", None)
    if m is None:
        m = db.maintenance = Maintenance(min_rows=0)
    return m


def attach_maintenance(db: Database, *, min_rows: int, share: float, slice_rows: int = SLICE_ROWS,
                       pause: float = 1.0) -> Maintenance:
    """Give the store a commit-triggered re-cluster and check it once now (a store built in bulk,
    in append order, is sorted without waiting for a write)."""
    m = Maintenance(min_rows=min_rows, share=share, slice_rows=slice_rows, pause=pause)
    db.maintenance = m
    db.commit_listeners.append(m.on_commit)
    m.check(db)
    return m
