"""Erase a scope from the lake, and prove it: the lake half of forget().

What leaves the lake, in order (`erase_from_lake`):

1. one lake transaction deletes the scope's rows from every lake table that has the identity
   columns (all shards: a user moved between shards is erased from both), and the entities the
   shard's erasure orphaned;
2. `ducklake_rewrite_data_files` rewrites every data file that now has deleted rows (the erased
   rows' bytes were in them), `ducklake_expire_snapshots` drops every snapshot but the current
   one (time travel to before the erasure ends here), `ducklake_cleanup_old_files` and
   `ducklake_delete_orphaned_files` delete the old files (also Parquet files a killed publish wrote
   and never committed);
3. the catalog: text min/max statistics are replaced by text-free bounds (`scrub_text_stats`, also after every
   publish: DuckLake keeps a file's and a table's min/max of each VARCHAR column in PostgreSQL,
   and a table's min/max is not recomputed on delete), inlining is off (every row lives in a
   Parquet file), then PostgreSQL's own copies go: `VACUUM FULL` of the DuckLake tables (a plain
   VACUUM marks dead rows free but leaves their bytes in the page), `ANALYZE` and `VACUUM FULL`
   of `pg_statistic` (sampled column values), `pg_switch_wal()` and `CHECKPOINT` (the WAL segment
   that logged the rows is retired; with `wal_recycle = off` it is unlinked, not kept for reuse);
4. the byte scan: every file under the data path and, when the catalog's data directory is on
   this machine, under PostgreSQL's data directory, for the erasure's needles.

Step 3 needs a PostgreSQL superuser (pg_statistic, pg_switch_wal, CHECKPOINT); without one the
steps that could not run are named in the verification and it is not `ok`.
"""
from __future__ import annotations

import mmap
import os
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.errors import LakeError
from memstore.core.identity import IDENTITY_KEYS
from memstore.governance.catalog import quote_ident
from memstore.lake import tables as T
from memstore.lake.session import LAKE, LakeSession

if TYPE_CHECKING:
    from memstore.store.database import Database

TEXT_TYPES = ("varchar", "json", "blob")


def finish_lake_erasure(db: Database, settings: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The finisher registered for target "lake" (memstore/governance/downstream.py)."""
    return erase_from_lake(settings["lake"], payload["scope"], shard=settings.get("shard"),
                           entity_ids=payload.get("entity_ids") or [], needles=payload.get("needles") or [])


def erase_from_lake(lake: str, scope: dict[str, str], *, shard: str | None = None, entity_ids: list[str] = (),
                    needles: list[str] = ()) -> dict[str, Any]:
    """Erase `scope` from the lake (see module doc); returns the verification (no personal content)."""
    named = {k: v for k, v in scope.items() if k in IDENTITY_KEYS and v is not None}
    if not named:
        raise LakeError("erasing from the lake needs a scope (user_id, agent_id or run_id)")
    timings: dict[str, float] = {}
    out: dict[str, Any] = {"rows_removed": {}}
    t = time.perf_counter()
    with LakeSession(lake, maintenance=True) as s:
        lake_tables = _lake_tables(s)
        with s.atomic("erase"):
            for table, cols in sorted(lake_tables.items()):
                if table == T.PUBLISHES:
                    continue
                conds = []
                if all(k in cols for k in named):
                    conds.append(" AND ".join(f"{quote_ident(k)} = ${k}" for k in named))
                if table == "entities" and entity_ids and shard:
                    conds.append("(shard = $shard AND id IN (SELECT id FROM _erased_entities))")
                if not conds:
                    continue
                params = {k: v for k, v in named.items() if f"${k}" in conds[0]}
                if "$shard" in " ".join(conds):
                    params["shard"] = shard
                with s.registered("_erased_entities", pa.table({"id": pa.array(list(entity_ids), pa.string())})):
                    n = s.run(f"erase:{table}", params,
                              sql=f"DELETE FROM {LAKE}.{quote_ident(table)} WHERE " + " OR ".join(conds)).fetchall()[0][0]
                out["rows_removed"][table] = int(n)
        timings["delete"] = _ms(t)
        t = time.perf_counter()
        out.update(purge(s))
        timings["purge"] = _ms(t)
        t = time.perf_counter()
        data_path = lake_data_path(s)
        pg_dir = pg_data_directory(s)
        out["scan"] = scan_for_needles(s, data_path, pg_dir, list(needles), lake_tables=lake_tables)
        out["scan"]["pg_data_directory_scanned"] = bool(pg_dir)
        timings["verify"] = _ms(t)
    out["timings_ms"] = timings
    out["ok"] = not out["scan"]["hits"] and not out["maintenance_errors"] and bool(pg_dir)
    if not pg_dir:
        out["maintenance_errors"].append("PostgreSQL's data directory is not on this machine (or not readable): "
                                         "the catalog's bytes were not scanned")
    return out


def purge(s: LakeSession) -> dict[str, Any]:
    """Steps 2 and 3 of the module doc on an open maintenance session."""
    out: dict[str, Any] = {"maintenance_errors": []}
    out["files_rewritten"] = _count(s, "rewrite", f"SELECT count(*) FROM ducklake_rewrite_data_files('{LAKE}', "
                                                  "delete_threshold => 0)")
    out["snapshots_expired"] = _count(s, "expire", f"SELECT count(*) FROM ducklake_expire_snapshots('{LAKE}', "
                                                   "older_than => now())")
    out["files_removed"] = _count(s, "cleanup", f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', "
                                                "cleanup_all => true)")
    try:
        out["orphans_removed"] = _count(s, "orphans", f"SELECT count(*) FROM ducklake_delete_orphaned_files('{LAKE}', "
                                                      "cleanup_all => true)")
    except LakeError as exc:
        out["maintenance_errors"].append(f"orphaned files: {str(exc)[:200]}")
    scrub_text_stats(s)
    out["maintenance_errors"] += vacuum_catalog(s)
    return out


TEXT_MAX = "repeat(chr(1114111), 16)"     # U+10FFFF x16: above any real text, in UTF-8 byte order


def scrub_text_stats(s: LakeSession) -> None:
    """Replace the min/max of text columns in the catalog's statistics (file and table level) by
    bounds that hold no text: '' and sixteen U+10FFFF. They stay valid bounds (a NULL bound makes
    DuckLake skip the file: wrong answers, measured), so pruning on text columns is lost while
    partitions still prune by shard and user bucket."""
    for table in ("ducklake_file_column_stats", "ducklake_table_column_stats"):
        s.pg(f"scrub:{table}",
             f"UPDATE {table} st SET min_value = '', max_value = {TEXT_MAX} FROM ducklake_column c "
             "WHERE c.column_id = st.column_id AND c.table_id = st.table_id "
             f"AND lower(c.column_type) IN ({', '.join(repr(t) for t in TEXT_TYPES)}) "
             f"AND (st.min_value IS DISTINCT FROM '' OR st.max_value IS DISTINCT FROM {TEXT_MAX})")


def vacuum_catalog(s: LakeSession) -> list[str]:
    """VACUUM FULL + ANALYZE the DuckLake tables, VACUUM FULL pg_statistic, retire the WAL; the
    steps that failed (e.g. not a superuser)."""
    errors = []
    names = [r[0] for r in s.pg_rows("catalog_tables", "SELECT tablename FROM pg_tables WHERE schemaname = "
                                                        "current_schema() AND tablename LIKE 'ducklake%'")]
    steps = [(f"vacuum:{n}", f"VACUUM (FULL, ANALYZE) {n}") for n in names]
    steps += [("vacuum:pg_statistic", "VACUUM FULL pg_catalog.pg_statistic"),
              ("switch_wal", "SELECT pg_switch_wal()"), ("checkpoint", "CHECKPOINT"),
              ("switch_wal2", "SELECT pg_switch_wal()"), ("checkpoint2", "CHECKPOINT")]
    for name, sql in steps:
        try:
            s.pg(name, sql, transaction=False)
        except LakeError as exc:
            errors.append(f"{name}: {str(exc)[:200]}")
    return errors


def lake_data_path(s: LakeSession) -> str:
    """The lake's data path, as the catalog records it."""
    rows = s.pg_rows("data_path", "SELECT value FROM ducklake_metadata WHERE key = 'data_path'")
    return rows[0][0] if rows else ""


def pg_data_directory(s: LakeSession) -> str | None:
    """PostgreSQL's data directory when it is on this machine and readable, else None."""
    try:
        rows = s.pg_rows("data_directory", "SELECT setting FROM pg_settings WHERE name = 'data_directory'")
    except LakeError:
        return None
    path = rows[0][0] if rows and rows[0][0] else None
    return path if path and os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK) else None


def scan_for_needles(s: LakeSession, data_path: str, pg_dir: str | None, needles: list[str], *,
                     lake_tables: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Byte counts of each needle in every file under the data path and PostgreSQL's data
    directory. A needle still present in a live lake row (another user's text) cannot tell a leak
    from content: it is set aside as shared. So is, for the PostgreSQL scan only, a needle that
    PostgreSQL's own files already hold (found in the template1 database or the .conf files: a
    word such as "number" or "another")."""
    live = _shared_needles(s, needles, lake_tables)
    scan = [n.encode("utf-8") for n in needles if n not in live]
    hits: dict[str, int] = {}
    files = 0
    vocabulary: list[bytes] = []
    roots = [(data_path, scan)]
    if pg_dir:
        baseline = [os.path.join(pg_dir, f) for f in os.listdir(pg_dir) if f.endswith(".conf")]
        baseline += [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(pg_dir, "base", "1")) for f in fs]
        vocabulary = [n for n in scan if any(_count_in_file(p, [n]) for p in baseline)]
        roots.append((pg_dir, [n for n in scan if n not in vocabulary]))
    for root, patterns in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                files += 1
                n = _count_in_file(path, patterns)
                if n:
                    hits[_masked(path, root)] = n
    return {"files_scanned": files, "needles": len(scan), "shared_needles": len(live),
            "postgres_vocabulary_needles": len(vocabulary), "hits": hits}


def _shared_needles(s: LakeSession, needles: list[str], lake_tables: dict[str, dict[str, str]]) -> set[str]:
    shared = set()
    for table, cols in lake_tables.items():
        text = [c for c, typ in cols.items() if "VARCHAR" in typ.upper() and c not in ("_key", "_hash")]
        if not text or table == T.PUBLISHES:
            continue
        row = "concat_ws(chr(31), " + ", ".join(f"CAST({quote_ident(c)} AS VARCHAR)" for c in text) + ")"
        for n in needles:
            if n in shared:
                continue
            if s.scalar(f"SELECT count(*) FROM {LAKE}.{quote_ident(table)} WHERE contains({row}, ?)", [n]):
                shared.add(n)
    return shared


def _count_in_file(path: str, patterns: list[bytes]) -> int:
    if not patterns:
        return 0
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return 0
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return sum(_occurrences(mm, p) for p in patterns)
    except (OSError, ValueError):
        return 0


def _occurrences(mm: mmap.mmap, pattern: bytes) -> int:
    n, i = 0, mm.find(pattern)
    while i != -1:
        n += 1
        i = mm.find(pattern, i + 1)
    return n


def _masked(path: str, root: str) -> str:
    return "<root>/" + os.path.relpath(path, root)


def _lake_tables(s: LakeSession) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for table, col, typ in s.rows("lake_columns", sql="SELECT table_name, column_name, data_type FROM duckdb_columns() "
                                                      f"WHERE database_name = '{LAKE}'"):
        out.setdefault(table, {})[col] = typ
    return out


def _count(s: LakeSession, name: str, sql: str) -> int:
    rows = s.rows(name, sql=sql)          # fetch all: a half-read result leaves the call uncommitted
    return int(rows[0][0] or 0) if rows else 0


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)
