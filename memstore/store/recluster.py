"""Keep each scope's rows contiguous: re-cluster memories and postings by scope in bounded slices,
started by the store's commits (never by a read).

DuckDB skips row groups by their min/max (zonemaps) and, inside a row group, decompresses the
other columns only for the vectors of 2,048 rows where the filter matched. Rows arrive in time
order, so in append order one user's 1,000 memories touch every row group and nearly every vector
of memories and of the posting tables (7.5M keyword postings at 1M memories): measured at 100k
memories, a scoped search's posting statement costs 7.2 ms in append order and 1.9 ms sorted by
scope (bench/search_latency.py). Sorting by (user_id, agent_id, run_id) fixes that.

A pass sorts the store one slice at a time: a slice is a range of consecutive users holding at
most `slice_rows` memories (one user at least), sized to take about `slice_s` seconds at the pace
of the slice before. Each slice is one short transaction that appends a sorted copy of the range's
rows to memories and both posting tables and deletes the originals (sql/queries/admin/recluster_*.sql).
Slices run in user order, so after a pass each table is sorted again (rows added meanwhile form
the new tail).

Tail passes. Once a pass has sorted the store, later passes sort only what was appended since: a
tail pass plans, copies and deletes only the rows after the last sorted run (its end per table is
recorded in store_meta, robust to the row-id renumbering of a vacuum: memstore/store/cluster_runs.py)
and leaves them as one more sorted run after it. Cost and WAL follow the tail, not the table (1M
rewritten to place 100k was the old steady state). A search reads one or two row groups per run, so
runs pile up only to `max_runs` (MAX_RUNS): the pass that would make one more merges every run after
the first (a pass over the rows after run 1), or rewrites the whole table (a full pass) when those
later runs hold more than `merge_share` (MERGE_SHARE) of it. optimize() always runs a full pass.
A store sorted by an earlier version has no run ends recorded, only the count of memories its last
pass left: its sorted part is found from the rows (cluster_runs.adopt_sorted: a sorted run has long
stretches without a descent of user, a tail of adds does not), so its first pass here is a tail
pass too. Only a store never sorted (or one whose rows do not match that count) gets a full pass.
The trigger (`due`): a store with recorded runs starts a tail pass once its tail passes the smaller
of `share` of the table and `tail_rows` (TAIL_ROWS): every search reads the whole tail (its row
groups hold every user), so the tail, not the table, sets what it adds to a search.

Where searches waited (1M memories in append order, 50k-memory slices, measured with a timeline
of slice phases and searches): not on the copy statements but on the COMMIT. DuckDB checkpoints
at a COMMIT once the WAL passes 16 MiB; after a slice every row group is partly deleted and the
checkpoint rewrites them (3-80 s, at every slice, again for the same row groups); and the COMMIT
held the scope cache's lock, which every search takes. So: no automatic checkpoint during the
pass (`wal_held`); the pass checkpoints itself each time CHECKPOINT_SHARE of the memories moved,
without vacuum (`vacuum_held`: a checkpoint then only writes the moved rows, and DuckDB holds every
COMMIT back while a CHECKPOINT runs), and at the end with vacuum (the emptied row groups go); the COMMITs and CHECKPOINTs run under the write lock only. Readers never wait (MVCC: they read the
snapshot before the slice's commit, and a slice changes no content, so the scope cache stays
valid); writers wait for one slice at most, not the pass: the write lock (memstore/store/write_lock.py)
counts the writers waiting for it and the pass takes it for each slice, checkpoint and record only
after they got it, and a slice aims at SLICE_S (0.25 s); the last slice's run end is read (by the
identity of its rows) before the final checkpoint, which no longer runs under the last slice's lock.
Rows other writers add between two slices land inside the sorted run, each in a row group of
sorted users whose min/max it widens to its own user (a search of any user in between then reads
that row group too): the pass records where they landed and, under the last slice's lock, moves
them behind the run's end (_move_strays), where the next tail pass sorts them.
The pass pauses `pause` x a slice's duration after each slice so searches keep most of the CPU;
memory stays bounded by a slice. DuckDB itself makes a COMMIT wait for a running CHECKPOINT
(measured, 1.5.5): a checkpoint's length is the floor of an add's wait during a full pass.

>>> next_slice([("a", 3), ("b", 4), ("c", 2)], start=1, budget=6)      # users b..c: one slice
3
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.store.cluster_runs import Run, adopt_sorted, mark_end, read_runs, resolve_run, tail_rows, write_runs
from memstore.store.quoting import sql_ident, sql_string
from memstore.store.sqlfiles import load_sql
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

log = logging.getLogger("memstore.recluster")

CLUSTERED_TABLES = ("memories", "keyword_postings", "entity_postings")
CHECK_EVERY_S = 60.0
SMALL_EVERY_S = 1.0             # below min_rows: a count(*) a second at most (an add costs none)
SLICE_ROWS = 50_000             # memories per slice at most (their postings come along: ~9x as many rows)
MIN_SLICE_ROWS = 2_000          # a time-bounded slice moves at least this many (each slice scans the tables)
SLICE_S = 0.25                  # a background slice aims at this many seconds (writers wait for one slice at most:
                                # the pass lets every waiting writer in before each slice and checkpoint)
TAIL_ROWS = 20_000              # a sorted store starts a tail pass once this many memories were appended (at most)
MAX_RUNS = 8                    # sorted runs before the next pass merges the later ones (choose_start)
MERGE_SHARE = 0.5               # ... or rewrites the whole table when those hold more than this share of it
CHECKPOINT_SHARE = 0.1          # a full pass checkpoints each time this share of the memories moved (0: at its end only):
                                # without vacuum (vacuum_held) each writes only the rows moved since the last
RETRY_S = 600.0                 # a pass that failed is not started again before this many seconds
PASS_THREADS = 1                # DuckDB threads while a background pass runs: searches keep the other cores
                                # (1M + 25k tail, quiet: p95 during / after 1.5-1.7x on 1 thread, 1.8-2.2x on 2)


class RunLost(RuntimeError):
    """A tail pass could no longer find where the sorted runs end (their sentinel rows were
    deleted between two slices): the pass stops, the next one starts from an earlier run."""


def _slice_sql(name: str, table: str, lo: str | None) -> str:
    where = "user_id IS NULL" if lo is None else "user_id >= $lo AND user_id <= $hi"
    return load_sql(f"queries/admin/{name}").replace("/*TABLE*/", sql_ident(table)).replace("/*SLICE*/", where)


def recluster_slice(db: Database, lo: str | None, hi: str | None, run: Run | None = None,
                    strays: dict[str, Any] | None = None) -> float:
    """Sort one user range of memories and postings to the end of each table (one transaction):
    the range's rows after `run` (a recorded sorted run: a tail pass), or all of them (None).

    The COMMIT (it writes the slice's rows to the WAL: ~2 s for 50k memories on a loaded machine)
    runs without the scope cache's lock, which every search takes: the slice moves rows and changes
    no content, so a search reads the same scope on either side of it. The cache records the files
    as the slice left them afterwards (a search that looked in between dropped its copies: correct,
    only colder). Where the run ends is found again inside the slice's transaction (a checkpoint
    between slices may have renumbered the rows). Returns the seconds it held the write lock.
    `strays` (the pass's): per table, the row-id end the slice before left and the ranges other
    writers appended since (see _move_strays)."""
    params = {} if lo is None else {"lo": lo, "hi": hi}
    with db.write_lock.after_writers():     # every writer waiting now goes first
        t0 = time.perf_counter()
        seen = _files_seen(db)
        with write_unit(db, "optimize", keeps_cache=True):
            starts = {t: 0 for t in CLUSTERED_TABLES} if run is None else resolve_run(db, run)
            if starts is None:
                raise RunLost("the end of the last sorted run is no longer found")
            for table in CLUSTERED_TABLES:
                p = dict(params, start=starts[table])
                boundary = db.scalar(_slice_sql("recluster_boundary", table, lo))
                if strays is not None:
                    track = strays.setdefault(table, {"end": None, "gaps": []})
                    if track["end"] is not None and boundary > track["end"]:
                        track["gaps"].append((int(track["end"]), int(boundary)))
                db.run(f"optimize:refill:{table}", p, sql=_slice_sql("recluster_copy", table, lo), writes=True)
                db.run(f"optimize:clear:{table}", dict(p, boundary=boundary),
                       sql=_slice_sql("recluster_clear", table, lo), writes=True)
        _follow_files(db, seen)
        if strays is not None:          # where this slice's copies end (no vacuum in the pass: stable)
            for table in CLUSTERED_TABLES:
                strays[table]["end"] = int(db.scalar(_slice_sql("recluster_boundary", table, lo)) or 0)
        return time.perf_counter() - t0


def _move_strays(db: Database, strays: dict[str, Any]) -> dict[str, int] | None:
    """Move the rows other writers added between the pass's slices (they landed inside the sorted
    run, each in a row group of sorted users whose min/max it widens to its own user, so a search
    of any user between reads that row group too) behind the run's end, sorted: they are the
    store's tail, sorted by the next tail pass. Returns each table's run end (before the moved
    rows), None when no writer came between slices. Call holding the write lock, after the last
    slice (no vacuum ran since the gaps were recorded: their row ids still hold)."""
    if not any(t.get("gaps") for t in strays.values()):
        return None
    ends: dict[str, int] = {}
    seen = _files_seen(db)
    with write_unit(db, "optimize", keeps_cache=True):
        for table in CLUSTERED_TABLES:
            ends[table] = int(db.scalar(_slice_sql("recluster_boundary", table, "")) or 0)
            gaps = strays.get(table, {}).get("gaps") or []
            if not gaps:
                continue
            rows = " OR ".join(f"rowid >= $a{i} AND rowid < $b{i}" for i in range(len(gaps)))
            params: dict[str, Any] = {}
            for i, (a, b) in enumerate(gaps):
                params[f"a{i}"], params[f"b{i}"] = a, b
            for name in ("recluster_move_rows", "recluster_clear_rows"):
                sql = load_sql(f"queries/admin/{name}").replace("/*TABLE*/", sql_ident(table)).replace("/*ROWS*/", rows)
                db.run(f"optimize:{name}:{table}", params | ({"boundary": ends[table]} if "clear" in name else {}),
                       sql=sql, writes=True)
    _follow_files(db, seen)
    return ends


def _files_seen(db: Database) -> bool:
    """Are the store files as the scope cache last recorded them (no write it did not see)?"""
    with db.scope_cache.lock:
        return db.scope_cache.files_unchanged(db)


def _follow_files(db: Database, seen: bool) -> None:
    """After our own content-preserving write: record the files (or drop the cache when a write
    it had not seen came before ours)."""
    with db.scope_cache.lock:
        if seen:
            db.scope_cache.after_commit(db)
        else:
            db.scope_cache.invalidate()


def checkpoint_keeping_cache(db: Database) -> float:
    """CHECKPOINT (the emptied row groups go) and record the files as ours: it changes no row.
    Like a slice's COMMIT it runs under the write lock only, not the scope cache's, taken after
    the writers waiting for it (DuckDB makes a COMMIT wait for a running CHECKPOINT anyway)."""
    with db.write_lock.after_writers():
        t0 = time.perf_counter()
        seen = _files_seen(db)
        db.run("queries/admin/checkpoint")
        _follow_files(db, seen)
        return time.perf_counter() - t0


def recluster_pass(db: Database, *, slice_rows: int = SLICE_ROWS, pause: float = 0.0,
                   stop: threading.Event | None = None, slice_s: float = 0.0, full: bool = True,
                   max_runs: int = MAX_RUNS, merge_share: float = MERGE_SHARE,
                   threads: int | None = None, checkpoint_share: float | None = None) -> dict[str, Any]:
    """Sort the store by scope, slice by slice (see the module doc): with `full`, the whole table;
    else only the tail after the recorded runs (or a merge: choose_start). Returns the mode, the
    memories sorted, the slices, the longest slice's seconds and the pass's seconds. `slice_s` > 0
    sizes each slice to take about that long (at most slice_rows memories); 0: slices of slice_rows."""
    state = maintenance_for(db)
    with state.lock:
        state.active += 1               # its own commits start no second pass
    try:
        return _pass(db, slice_rows=slice_rows, pause=pause, stop=stop, slice_s=slice_s, full=full,
                     max_runs=max_runs, merge_share=merge_share, threads=threads,
                     checkpoint_share=CHECKPOINT_SHARE if checkpoint_share is None else checkpoint_share)
    finally:
        with state.lock:
            state.active -= 1


def choose_start(db: Database, runs: list[Run], *, full: bool, max_runs: int,
                 merge_share: float) -> tuple[int, dict[str, int]]:
    """How many recorded runs the pass keeps (it sorts what follows them into one more) and each
    table's first row to sort: all runs (a tail pass) while fewer than max_runs; at max_runs the
    first only (a merge of the later ones) unless those hold more than merge_share of the memories;
    none (a full pass) with `full`, without runs, or when no kept run's end can be found."""
    level = 0 if full or not runs else len(runs) if len(runs) < max_runs else 1
    if level == 1 and len(runs) > 1:
        after = tail_rows(db, runs[:1]) or 0
        if after > merge_share * int(db.scalar("SELECT count(*) FROM memories") or 0):
            level = 0
    while level > 0:
        starts = resolve_run(db, runs[level - 1])
        if starts is not None:
            return level, starts
        level -= 1
    return 0, {t: 0 for t in CLUSTERED_TABLES}


def _rebased(db: Database, run: Run) -> Run:
    """The run with its ends where they are now (a vacuum moves them down), sentinels renewed so
    that the next pass finds them with one lookup; as it was when they cannot be found."""
    starts = resolve_run(db, run)
    if starts is None or all(starts[t] == run[t]["end"] for t in CLUSTERED_TABLES):
        return run
    return mark_end(db, starts)


def _adopted(db: Database) -> list[Run]:
    """The run a pass of an earlier version left (it recorded only how many memories it sorted),
    found from the rows and recorded, so that this pass sorts only the tail: [] for a store never
    sorted (its first pass is a full one). See cluster_runs.adopt_sorted."""
    clustered = int(db.meta("clustered_rows") or 0)
    if clustered <= 0:
        return []
    with db.write_lock:
        run = adopt_sorted(db, clustered)
        if run is None:
            return []
        _meta_unit(db, [run], None)
    log.info("re-cluster of %s: the sorted rows a pass of an earlier version left end at %s",
             db.path, {t: e["end"] for t, e in run.items()})
    return [run]


def _meta_unit(db: Database, runs: list[Run] | None, clustered: int | None) -> None:
    """Record the runs (and the clustered row count) in one write unit that keeps the scope cache."""
    with db.write_lock.after_writers():
        seen = _files_seen(db)
        with write_unit(db, "optimize", keeps_cache=True):
            if runs is not None:
                write_runs(db, runs)
            if clustered is not None:
                db.run("queries/set_clustered_rows", {"rows": clustered})
        _follow_files(db, seen)


def next_slice(users: list[tuple[str | None, int]], start: int, budget: int) -> int:
    """One past the last of the users (from `start`) that one slice of at most `budget` memories
    takes (one user at least: a larger user is a slice alone).

    >>> users = [("a", 3), ("b", 4), ("c", 2)]
    >>> next_slice(users, 0, 6), next_slice(users, 1, 6), next_slice(users, 0, 1)
    (1, 3, 1)
    """
    end, n = start, 0
    while end < len(users) and (end == start or n + users[end][1] <= budget):
        n += users[end][1]
        end += 1
    return end


def next_budget(budget: int, rows: int, took: float, slice_s: float, slice_rows: int) -> int:
    """The next slice's memories: what `slice_s` seconds moved at the last slice's pace, at most
    twice and at least half the last budget (one slow moment does not make every slice tiny),
    within [MIN_SLICE_ROWS, slice_rows].

    >>> next_budget(10_000, 10_000, took=4.0, slice_s=2.0, slice_rows=50_000)
    5000
    >>> next_budget(10_000, 10_000, took=0.5, slice_s=2.0, slice_rows=50_000)
    20000
    """
    if slice_s <= 0:
        return slice_rows
    want = int(rows * slice_s / max(took, 1e-3))
    return max(1, min(slice_rows, max(MIN_SLICE_ROWS, budget // 2, min(want, budget * 2))))


@contextlib.contextmanager
def wal_held(db: Database) -> Iterator[None]:
    """No automatic checkpoint while the pass runs. A slice deletes a few rows from every row group
    of a store in append order, and DuckDB's checkpoint (automatic at a COMMIT once the WAL passes
    16 MiB) then rewrites each such row group: 3-80 s inside a slice's COMMIT at 1M memories,
    under the write lock, again at every slice. Held, the slices' rows wait in the WAL (~80 MiB
    per 50k memories, spilled to DuckDB's temp directory beyond memory_limit) and the pass
    checkpoints itself at a few points (see _pass)."""
    before = db.scalar("SELECT current_setting('checkpoint_threshold')")
    db.run("queries/admin/recluster_hold_wal")
    try:
        yield
    finally:
        db.run("queries/admin/recluster_release_wal", sql=load_sql("queries/admin/recluster_release_wal")
               .replace("/*THRESHOLD*/", sql_string(str(before))))


@contextlib.contextmanager
def vacuum_held(db: Database) -> Iterator[None]:
    """No vacuum at the pass's own checkpoints while it moves rows (sql/queries/admin/recluster_hold_vacuum.sql):
    each of them then writes only the rows moved since the last one, so the COMMITs DuckDB holds
    back meanwhile wait for a fraction of a second, not for a rewrite of every row group. The
    setting is back (also on error or stop) for the pass's last checkpoint."""
    before = int(db.scalar("SELECT current_setting('max_vacuum_tasks')"))
    sql = load_sql("queries/admin/recluster_hold_vacuum")
    db.run("queries/admin/recluster_hold_vacuum", sql=sql.replace("/*TASKS*/", "0"))
    try:
        yield
    finally:
        db.run("queries/admin/recluster_hold_vacuum", sql=sql.replace("/*TASKS*/", str(before)))


@contextlib.contextmanager
def threads_held(db: Database, threads: int | None) -> Iterator[None]:
    """DuckDB runs on `threads` worker threads while the pass runs (None: as configured), the old
    setting back after (also on error or stop)."""
    if not threads:
        yield
        return
    before = int(db.scalar("SELECT current_setting('threads')"))
    db.run("queries/admin/recluster_hold_threads",
           sql=load_sql("queries/admin/recluster_hold_threads").replace("/*THREADS*/", str(int(threads))))
    try:
        yield
    finally:
        db.run("queries/admin/recluster_hold_threads",
               sql=load_sql("queries/admin/recluster_hold_threads").replace("/*THREADS*/", str(before)))


def _pass(db: Database, *, slice_rows: int, pause: float, stop: threading.Event | None,
          slice_s: float, full: bool, max_runs: int, merge_share: float, threads: int | None = None,
          checkpoint_share: float = CHECKPOINT_SHARE) -> dict[str, Any]:
    """The pass (see recluster_pass). A full pass CHECKPOINTs each time `checkpoint_share` of the
    memories moved, without vacuum (vacuum_held): each checkpoint writes the rows moved since the
    last one and bounds the WAL, and DuckDB holds COMMITs back for that short write only. (With
    vacuum, as before, each checkpoint also rewrote every partly deleted row group, so the moved
    users left the old row groups' min/max and searches during the pass got cheaper as it went,
    but adds waited 5-10 s at each checkpoint at 100k on a loaded machine.) The last checkpoint
    vacuums: the row groups the pass emptied are dropped. A tail pass checkpoints once, at its end."""
    t0 = time.perf_counter()
    runs = read_runs(db)
    if not runs and not full:
        with threads_held(db, threads):     # a scan of every table: on the pass's threads
            runs = _adopted(db)
    level, starts = choose_start(db, runs, full=full, max_runs=max_runs, merge_share=merge_share)
    mode = "full" if level == 0 else "tail" if level == len(runs) else "merge"
    kept = runs[:level]
    if kept and any(starts[t] != kept[-1][t]["end"] for t in CLUSTERED_TABLES):
        with db.write_lock:         # a vacuum moved the run's end: record where it is now (each slice
            kept = [_rebased(db, r) for r in kept]              # then finds it with one lookup a table)
            starts = resolve_run(db, kept[-1]) or starts
            _meta_unit(db, kept, None)
    elif len(kept) < len(runs):     # the runs after `kept` are rewritten: a pass killed midway must not trust them
        _meta_unit(db, kept, None)
    run = kept[-1] if kept else None
    users = db.rows("queries/admin/recluster_plan", starts)
    total = sum(n for _, n in users)
    named = [(u, n) for u, n in users if u is not None]
    nulls = len(named) < len(users)
    slice_rows = max(1, int(slice_rows))
    budget = min(slice_rows, MIN_SLICE_ROWS) if slice_s > 0 else slice_rows     # then grown to slice_s
    longest = 0.0
    holds: list[tuple[str, float, float]] = []     # (what, time.perf_counter() at its start, seconds it held the lock)
    strays: dict[str, Any] = {}                     # rows other writers added between slices (_move_strays)
    done = moved = checkpoints = 0
    start = 0
    lost = False
    with wal_held(db), threads_held(db, threads), contextlib.ExitStack() as held:
        vacuum = held.enter_context(contextlib.ExitStack())
        vacuum.enter_context(vacuum_held(db))
        while start < len(named) or nulls:
            if stop is not None and stop.is_set():
                break
            if start < len(named):
                end = next_slice(named, start, budget)
                lo, hi, rows = named[start][0], named[end - 1][0], sum(n for _, n in named[start:end])
            else:
                lo = hi = None
                rows = total - sum(n for _, n in named)
            if (lo is None or end >= len(named)) and not (lo is not None and nulls):
                held.enter_context(db.write_lock.after_writers())   # the last slice: no add before its end is read
            s = time.perf_counter()
            try:
                holds.append(("slice", s, recluster_slice(db, lo, hi, run, strays)))
            except RunLost:
                lost = True
                break
            if lo is None:
                nulls = False
            else:
                start = end
            took = time.perf_counter() - s
            longest = max(longest, took)
            done += 1
            budget = next_budget(budget, max(rows, 1), took, slice_s, slice_rows)
            moved += rows
            if start >= len(named) and not nulls:
                break
            if level == 0 and checkpoint_share > 0 and moved >= checkpoint_share * total and start < len(named):
                c = time.perf_counter()         # the moved users' rows leave the old row groups' min/max:
                holds.append(("checkpoint", c, checkpoint_keeping_cache(db)))
                moved = 0                       # their searches skip those row groups from now on
                checkpoints += 1
            if pause > 0 and stop is not None:
                stop.wait(pause * took)
            elif pause > 0:
                time.sleep(pause * took)
        complete = start >= len(named) and not nulls and not lost
        if complete:                    # still under the last slice's lock: no add before the run's end is read
            new_run = mark_end(db, _move_strays(db, strays))
        else:
            new_run = None
        vacuum.close()                  # the last checkpoint vacuums (drops the row groups the pass emptied)
        held.close()                    # the checkpoint below lets waiting writers in first
        ck = time.perf_counter()
        holds.append(("checkpoint", ck, checkpoint_keeping_cache(db)))
        checkpoint_s = time.perf_counter() - ck
        if new_run is not None:         # the ends where the checkpoint's vacuum moved them (found by identity)
            with db.write_lock.after_writers():
                _meta_unit(db, [_rebased(db, r) for r in kept] + [_rebased(db, new_run)],
                           int(db.scalar("SELECT count(*) FROM memories") or 0))
    return {"mode": mode, "memories": total, "slices": done, "complete": complete, "runs": len(kept) + complete,
            "checkpoints": checkpoints + 1, "longest_slice_s": round(longest, 3),
            "checkpoint_s": round(checkpoint_s, 3), "seconds": round(time.perf_counter() - t0, 3),
            "longest_hold_s": {k: round(max((h for w, _, h in holds if w == k), default=0.0), 3)
                               for k in ("slice", "checkpoint")},
            "holds": holds}


def mark_sorted(db: Database) -> None:
    """Record the store as sorted by scope as it is now (one run ending at each table's last row):
    for a bulk import or builder that wrote every table in scope order, so that the store's next
    pass is a tail pass, not a full one."""
    with db.write_lock:
        _meta_unit(db, [mark_end(db)], int(db.scalar("SELECT count(*) FROM memories") or 0))


def sorted_import(db: Database) -> SortedImport:
    """For an import that writes through the add path in scope order (import_mem0): no background
    pass starts while it runs, and at its end `record()` records its rows as one more sorted run
    when the store was empty or sorted before it and no other write came between (else the rows
    are left to the next pass), so a store imported that way needs a tail pass at most, not a full one."""
    return SortedImport(db)


class SortedImport:
    """See sorted_import: `with sorted_import(db) as imp: ...; imp.record(n)`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.state = maintenance_for(db)

    def __enter__(self) -> SortedImport:
        with self.state.lock:
            self.state.active += 1          # its commits start no pass (a full one would sort what it is writing)
            self.eligible = not self.state.running()
        self.runs = read_runs(self.db)
        self.before = int(self.db.scalar("SELECT count(*) FROM memories") or 0)
        tail = tail_rows(self.db, self.runs)
        self.eligible = self.eligible and (self.before == 0 or tail == 0)
        return self

    def record(self, imported: int) -> bool:
        """Record the imported rows as a sorted run (see sorted_import). Returns True if recorded."""
        if not self.eligible or imported <= 0:
            return False
        with self.db.write_lock:
            total = int(self.db.scalar("SELECT count(*) FROM memories") or 0)
            if total != self.before + imported or read_runs(self.db) != self.runs:
                return False                # another write came between: the next pass sorts it
            _meta_unit(self.db, self.runs + [mark_end(self.db)], total)
        return True

    def __exit__(self, *exc: object) -> None:
        with self.state.lock:
            self.state.active -= 1
        if self.state.min_rows > 0:
            self.state.count(self.db, force=True)


def due(total: int, clustered: int, min_rows: int, share: float, tail_rows: int | None = None) -> bool:
    """Is a re-cluster due: a table of at least min_rows whose unclustered tail passes share (with
    sorted runs recorded, `tail_rows`: the smaller of the two)?

    >>> due(total=100_000, clustered=0, min_rows=50_000, share=0.25), due(100_000, 90_000, 50_000, 0.25)
    (True, False)
    >>> due(1_000_000, 970_000, 50_000, 0.1), due(1_000_000, 970_000, 50_000, 0.1, tail_rows=20_000)
    (False, True)
    """
    limit = share * total if tail_rows is None else min(share * total, tail_rows)
    return min_rows > 0 and total >= min_rows and total - min(clustered, total) > limit


@dataclass
class Maintenance:
    """The re-cluster of one open store: when it last counted, the running pass (at most one)."""

    min_rows: int = 50_000
    share: float = 0.1
    slice_rows: int = SLICE_ROWS
    pause: float = 1.0                  # sleep this x a slice's duration after it (searches get the CPU)
    every_s: float = CHECK_EVERY_S
    slice_s: float = SLICE_S            # a slice aims at this many seconds (at most slice_rows memories)
    tail: bool = True                   # passes after the first sort only the tail (False: every pass is full)
    tail_rows: int = TAIL_ROWS          # a sorted store's tail starts a pass at this many memories (or share)
    max_runs: int = MAX_RUNS
    merge_share: float = MERGE_SHARE
    threads: int | None = PASS_THREADS  # DuckDB threads while a background pass runs (None: as configured)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.total_rows: int | None = None     # memories at the last count
        self.clustered_rows = 0                # of which sorted by the last pass
        self.recorded_runs = 0                 # sorted runs recorded (a tail pass is possible)
        self.counted_at = -float("inf")
        self.runs: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.active = 0                        # passes running now (background or optimize())
        self.failed_at = -float("inf")         # when the last background pass failed (retried after RETRY_S)

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
            runs = read_runs(db)
            tail = tail_rows(db, runs)
            self.clustered_rows = int(db.meta("clustered_rows") or 0) if tail is None else self.total_rows - tail
            self.recorded_runs = len(runs)
            self.counted_at = now
        return int(self.total_rows or 0)

    def on_commit(self, db: Database) -> bool:
        """Commit listener: start a background pass when one is due. Returns True if started."""
        return self.check(db)

    def check(self, db: Database) -> bool:
        """Start a background pass when one is due (see the module doc). Returns True if started."""
        if self.min_rows <= 0 or db.read_only or self.stop_event.is_set() or self.running() or self.active:
            return False
        if time.monotonic() - self.failed_at < RETRY_S:
            return False            # a failed pass is not restarted at every commit (its error stays in .error)
        total = self.count(db, small_exact=True)
        # a store sorted by an earlier version (a count, no run ends): its pass adopts the sorted part
        tail_limit = self.tail_rows if self.tail and (self.recorded_runs or self.clustered_rows) else None
        if not due(total, self.clustered_rows, self.min_rows, self.share, tail_limit):
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
            out = recluster_pass(db, slice_rows=self.slice_rows, pause=self.pause, stop=self.stop_event,
                                 slice_s=self.slice_s, full=not self.tail, max_runs=self.max_runs,
                                 merge_share=self.merge_share, threads=self.threads)
            self.runs.append(out)
            self.count(db, force=True)
            log.info("re-cluster of %s: %s", db.path, {k: v for k, v in out.items() if k != "holds"})
        except BaseException as exc:
            self.error = exc
            self.failed_at = time.monotonic()
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
