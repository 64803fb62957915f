"""optimize(): re-cluster the scanned tables by scope so one user's rows sit in few row groups.

The work is memstore/store/recluster.py's sliced pass (every slice back to back here), with the
analyst HNSW index dropped before and rebuilt after (an index on memories would be updated row by
row). The same pass runs by itself, in the background, when the store's commits find the
unclustered tail large (recluster.Maintenance); searches never start it. `store_rows` and
`unclustered_rows` tell search how the store is laid out (to choose how to read result rows).

>>> due(total=100_000, clustered=0, min_rows=50_000, share=0.25), due(100_000, 90_000, 50_000, 0.25)
(True, False)
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from memstore.core.errors import MemstoreError
from memstore.store.recluster import (
    CLUSTERED_TABLES,
    Maintenance,
    due,
    maintenance_for,
    recluster_pass,
)

if TYPE_CHECKING:
    from memstore.store.database import Database

__all__ = ["CLUSTERED_TABLES", "INDEX_NAME", "auto_state", "due", "ensure_hnsw", "optimize_store", "store_rows",
           "unclustered_rows"]

log = logging.getLogger("memstore.optimize")
INDEX_NAME = "memories_embedding_hnsw"     # named in sql/queries/admin/*_hnsw_index.sql


def optimize_store(db: Database) -> dict[str, Any]:
    """Sort memories and postings by scope (every slice of a re-cluster pass, back to back); drop
    and rebuild the analyst HNSW index around it. Returns rows per table and seconds."""
    t0 = time.perf_counter()
    with db.write_lock:
        had_hnsw = bool(db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]))
        if had_hnsw:
            db.run("queries/admin/drop_hnsw_index")
        try:
            out: dict[str, Any] = recluster_pass(db, slice_rows=maintenance_for(db).slice_rows)
            out.pop("holds", None)          # the pass's lock timeline: for benchmarks, not the report
            for table in CLUSTERED_TABLES:
                out[table] = db.scalar(f"SELECT count(*) FROM {table}")
        finally:        # the index comes back whether the rewrite committed or rolled back
            if had_hnsw:
                ensure_hnsw(db)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    maintenance_for(db).count(db, force=True)
    return out


def auto_state(db: Database) -> Maintenance:
    """The store's re-cluster state (running pass, runs, error): memstore/store/recluster.py."""
    return maintenance_for(db)


def store_rows(db: Database) -> int:
    """Rows in memories, counted at most once a minute per store (search uses it to choose how
    to read result rows)."""
    return maintenance_for(db).count(db)


def unclustered_rows(db: Database) -> int:
    """Rows in memories beyond the last re-cluster (the tail in append order), counted with
    `store_rows`: search reads result rows in its scope scan when the scope's rows are contiguous."""
    total = store_rows(db)
    return max(0, total - maintenance_for(db).clustered_rows)


def ensure_hnsw(db: Database, *, force: bool = False) -> bool:
    """Create the HNSW index when missing (or when force=True). Returns True if it was (re)built."""
    if not db.ensure_vss():
        raise MemstoreError("the DuckDB VSS extension is not available",
                            hint="pip install duckdb-extension-vss matching your duckdb version")
    db.run("queries/admin/hnsw_settings")      # persist the index; ef_search 1000 (see the file)
    exists = db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME])
    if exists and not force:
        return False
    with db.write_lock:
        t0 = time.perf_counter()
        if exists:
            db.run("queries/admin/drop_hnsw_index")
        db.run("queries/admin/create_hnsw_index")
        db.run("queries/admin/checkpoint")
        log.info("built HNSW index in %.1f s", time.perf_counter() - t0)
    return True
