"""Re-cluster the scanned tables by scope so one user's rows sit in few row groups.

DuckDB skips row groups by their min/max (zonemaps). Rows arrive in time order, so a user's
memories and postings are spread over every row group and a per-user search decompresses all of
them. Sorting by (user_id, agent_id, run_id) lets the scan skip almost everything. It is a
maintenance step (like VACUUM): searches are correct without it, only slower. Cost is a rewrite of
the three tables; run it after bulk ingest (`memstore optimize`).
"""
from __future__ import annotations

import time
from typing import Any

CLUSTERED_TABLES = ("memories", "keyword_postings", "entity_postings")
ORDER = "user_id NULLS LAST, agent_id NULLS LAST, run_id NULLS LAST"


def optimize_store(db: Any) -> dict[str, Any]:
    """Rewrite memories and postings sorted by scope in one transaction; drop and rebuild the
    analyst HNSW index around it. Returns rows per table and seconds."""
    from memstore.retrieval.search_all import INDEX_NAME, ensure_hnsw

    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    with db.write_lock:
        had_hnsw = bool(db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]))
        if had_hnsw:
            db.con.execute(f"DROP INDEX {INDEX_NAME}")
        try:
            with db.transaction("optimize") as con:
                for table in CLUSTERED_TABLES:
                    db.checkpoint(f"write:optimize:{table}")
                    con.execute(f'CREATE TEMP TABLE "_sorted_{table}" AS SELECT * FROM "{table}" ORDER BY {ORDER}')
                    con.execute(f'DELETE FROM "{table}"')
                    con.execute(f'INSERT INTO "{table}" SELECT * FROM "_sorted_{table}"')
                    con.execute(f'DROP TABLE "_sorted_{table}"')
                    out[table] = db.scalar(f'SELECT count(*) FROM "{table}"')
            db.con.execute("CHECKPOINT")
        finally:        # the index comes back whether the rewrite committed or rolled back
            if had_hnsw:
                ensure_hnsw(db)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out
