"""Where the sorted runs of the clustered tables end: the watermark a tail pass starts from.

After a re-cluster pass each clustered table is one or more runs sorted by scope followed by an
unsorted tail (the rows added since). A tail pass sorts only that tail into one more run, so it
must find where the last run ends, per table, robustly. A row id alone cannot say: a CHECKPOINT
that vacuums deleted rows renumbers every row after them (DuckDB 1.5, measured: 250k of 600k rows
deleted, the last row's id went from 599,999 to 339,999), and memories' timestamps can be set by
an import (postings have none). So each run's end is kept in store_meta (key `cluster_runs`, a
JSON list, oldest run first) as, per table, the row id one past the run and the identity
(RUN_KEYS) of the rows SENTINEL_OFFSETS before that end. `resolve_end` checks the row at end - 1
(one row-id lookup: the usual case); else it finds the nearest sentinel still there by its
identity (a vacuum moves it down with every row after it) and returns one past it: the rows between
it and the true end are re-sorted with the tail (more work, never a row skipped). None when no
sentinel is left: the caller starts from an earlier run (at worst a full pass).

>>> sentinel_rows([10, 9, 8, 7], offsets=(0, 2, 16))      # row ids, newest first
[10, 8]
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memstore.store.quoting import sql_ident
from memstore.store.sqlfiles import load_sql

if TYPE_CHECKING:
    from memstore.store.database import Database

RUN_KEYS: dict[str, tuple[str, ...]] = {      # columns that name one row of each clustered table
    "memories": ("id",),
    "keyword_postings": ("memory_id", "term"),
    "entity_postings": ("entity_id", "memory_id"),
}
SENTINEL_OFFSETS = (0, 16, 256, 4096)           # rows before a run's end whose identity is kept
META_KEY = "cluster_runs"

RunEnd = dict[str, Any]                         # {"end": row id one past the run, "keys": [[identity], ...]}
Run = dict[str, RunEnd]                         # table -> its end


def _sql(name: str, table: str) -> str:
    keys = RUN_KEYS[table]
    return (load_sql(f"queries/admin/{name}").replace("/*TABLE*/", sql_ident(table))
            .replace("/*KEYS*/", ", ".join(sql_ident(k) for k in keys))
            .replace("/*MATCH*/", " AND ".join(f"{sql_ident(k)} = $k{i}" for i, k in enumerate(keys))))


def sentinel_rows(rowids: list[int], offsets: tuple[int, ...] = SENTINEL_OFFSETS) -> list[int]:
    """The row ids (newest first) at each offset from the newest that exists."""
    return [rowids[o] for o in offsets if o < len(rowids)]


def read_runs(db: Database) -> list[Run]:
    """The recorded runs, oldest first ([] when the store was never clustered by a pass that
    records them, or a full pass is under way)."""
    raw = db.meta(META_KEY)
    try:
        runs = json.loads(raw) if raw else []
    except ValueError:
        return []
    return runs if isinstance(runs, list) and all(_well_formed(r) for r in runs) else []


def _well_formed(run: Any) -> bool:
    """A run as mark_end writes it (anything else in the meta counts as no run: a full pass)."""
    return isinstance(run, dict) and all(
        isinstance(run.get(t), dict) and isinstance(run[t].get("end"), int) and run[t]["end"] >= 0
        and isinstance(run[t].get("keys"), list)
        and all(isinstance(k, list) and len(k) == len(cols) for k in run[t]["keys"])
        for t, cols in RUN_KEYS.items())


def write_runs(db: Database, runs: list[Run]) -> None:
    """Record the runs (inside the caller's write unit)."""
    db.run("queries/admin/recluster_set_runs", {"runs": json.dumps(runs, separators=(",", ":"))})


def mark_end(db: Database, ends: dict[str, int] | None = None) -> Run:
    """Each clustered table's run end (`ends`, default: the table's current end: everything now
    in it counts as part of the run) and the identities of the rows before it (call under the
    write lock: after a pass's last slice, or to record where a vacuum moved a run's end)."""
    run: Run = {}
    for table in RUN_KEYS:
        end = ends[table] if ends is not None else int(db.scalar(_sql("recluster_boundary", table)) or 0)
        rows = db.rows("recluster:last_rows", {"from": end - max(SENTINEL_OFFSETS) - 1, "end": end},
                       sql=_sql("recluster_last_rows", table)) if end else []
        wanted = set(sentinel_rows([r[0] for r in rows]))
        run[table] = {"end": end, "keys": [list(r[1:]) for r in rows if r[0] in wanted]}
    return run


def resolve_end(db: Database, table: str, end: RunEnd) -> int | None:
    """One past the run's last row now (see the module doc), or None when none of its sentinels is
    left (the run's end is unknown)."""
    if not end["keys"]:
        return 0 if end["end"] == 0 else None
    last = db.rows("recluster:row_at", {"rowid": int(end["end"]) - 1}, sql=_sql("recluster_row_at", table))
    if last and list(last[0]) == list(end["keys"][0]):
        return int(end["end"])
    for key in end["keys"]:
        params = {f"k{i}": v for i, v in enumerate(key)} | {"end": int(end["end"])}
        found = db.scalar(_sql("recluster_find_row", table), params)
        if found is not None:
            return int(found) + 1
    return None


def resolve_run(db: Database, run: Run) -> dict[str, int] | None:
    """Each table's first row after the run, or None when any table's end is unknown."""
    starts: dict[str, int] = {}
    for table in RUN_KEYS:
        if table not in run:
            return None
        start = resolve_end(db, table, run[table])
        if start is None:
            return None
        starts[table] = start
    return starts


def tail_rows(db: Database, runs: list[Run]) -> int | None:
    """Memories after the last recorded run (the trigger's count: one row-id lookup when the end
    did not move), all of them when its end is lost (a reset or a scrub deleted its rows: the next
    pass is a full one), or None without runs."""
    if not runs or "memories" not in runs[-1]:
        return None
    end = resolve_end(db, "memories", runs[-1]["memories"])
    return int(db.scalar(load_sql("queries/admin/recluster_tail_rows"), {"end": end or 0}) or 0)



ADOPT_GAP = 1024        # memories' worth of rows without a descent: only a sorted run has such a stretch


def sorted_end(db: Database, table: str, gap: int) -> int:
    """One past the sorted part of `table` before its unsorted tail: where its last stretch of more
    than `gap` rows without a descent of user ends (sql/queries/admin/recluster_sorted_end.sql);
    0 when no stretch is that long, the table's end when its last `gap` rows hold no descent."""
    return int(db.scalar(_sql("recluster_sorted_end", table), {"gap": int(gap)}) or 0)


def adopt_sorted(db: Database, clustered: int) -> Run | None:
    """A run for a store that a pass of an earlier version sorted without recording where (only the
    count of memories it left, `clustered`): each table's sorted part as it is now, found from the
    rows (sorted_end; a tail of adds by many users descends every few rows, a sorted run only where
    an add landed between two slices of the pass). None when the memories' sorted part does not
    match that count (under half of it, or over it by more than 1 %: not rows such a pass left),
    so the next pass is a full one. Call under the write lock, then record the run (write_runs)."""
    if clustered <= 0:
        return None
    memories = int(db.scalar("SELECT count(*) FROM memories") or 0)
    ends = {}
    for table in RUN_KEYS:
        rows = memories if table == "memories" else int(db.scalar(f"SELECT count(*) FROM {sql_ident(table)}") or 0)
        ends[table] = sorted_end(db, table, ADOPT_GAP * max(1, round(rows / max(memories, 1))))
    if not clustered // 2 <= ends["memories"] <= clustered + clustered // 100:
        return None
    return mark_end(db, ends)
