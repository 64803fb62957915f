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
