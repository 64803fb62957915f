"""Re-cluster the scanned tables by scope so one user's rows sit in few row groups.

DuckDB skips row groups by their min/max (zonemaps). Rows arrive in time order, so a user's
memories and postings are spread over every row group and a per-user search decompresses all of
them. Sorting by (user_id, agent_id, run_id) lets the scan skip almost everything. It is a
maintenance step (like VACUUM): searches are correct without it, only slower. Cost is a rewrite of
the three tables; run it after bulk ingest (`memstore optimize`).

It also happens by itself: search checks (at most once a minute per store, one count) whether the
rows added since the last re-cluster, the unclustered tail, pass `search.auto_cluster_share` of a
table of at least `search.auto_cluster_min_rows` memories, and if so re-clusters in a background
thread. Readers are never blocked (DuckDB's MVCC: searches read the old snapshot until the rewrite
commits); writers wait for it, as for `optimize()`. A store with the analyst HNSW index is left to
`optimize()` (rebuilding the index takes minutes), as is a read-only one.

>>> due(total=100_000, clustered=0, min_rows=50_000, share=0.25), due(100_000, 90_000, 50_000, 0.25)
(True, False)
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from memstore.core.errors import MemstoreError
from memstore.store.quoting import sql_ident
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

log = logging.getLogger("memstore.optimize")
CHECK_EVERY_S = 60.0

CLUSTERED_TABLES = ("memories", "keyword_postings", "entity_postings")
ORDER = "user_id NULLS LAST, agent_id NULLS LAST, run_id NULLS LAST"
INDEX_NAME = "memories_embedding_hnsw"     # named in sql/queries/admin/*_hnsw_index.sql


def optimize_store(db: Database) -> dict[str, Any]:
    """Rewrite memories and postings sorted by scope in one transaction; drop and rebuild the
    analyst HNSW index around it. Returns rows per table and seconds."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    with db.write_lock:
        had_hnsw = bool(db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]))
        if had_hnsw:
            db.run("queries/admin/drop_hnsw_index")
        try:
            with write_unit(db, "optimize"):
                for table in CLUSTERED_TABLES:
                    name, tmp = sql_ident(table), sql_ident(f"_sorted_{table}")
                    db.run(f"optimize:sort:{table}",
                           sql=f"CREATE TEMP TABLE {tmp} AS SELECT * FROM {name} ORDER BY {ORDER}")
                    db.run(f"optimize:clear:{table}", sql=f"DELETE FROM {name}", writes=True)
                    db.run(f"optimize:refill:{table}", sql=f"INSERT INTO {name} SELECT * FROM {tmp}")
                    db.run(f"optimize:drop:{table}", sql=f"DROP TABLE {tmp}")
                    out[table] = db.scalar(f"SELECT count(*) FROM {name}")
                db.run("queries/set_clustered_rows", {"rows": out["memories"]})
            db.run("queries/admin/checkpoint")
        finally:        # the index comes back whether the rewrite committed or rolled back
            if had_hnsw:
                ensure_hnsw(db)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    state = auto_state(db)
    state.total_rows = state.clustered_rows = int(out["memories"])
    state.counted_at = time.monotonic()
    return out


def due(total: int, clustered: int, min_rows: int, share: float) -> bool:
    """Is a re-cluster due: a table of at least min_rows whose unclustered tail passes share?"""
    return min_rows > 0 and total >= min_rows and total - min(clustered, total) > share * total


class AutoCluster:
    """Per-store state of the automatic re-cluster: when it last checked, the running thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total_rows: int | None = None    # memories at the last check (None: not counted yet)
        self.clustered_rows = 0                # of which sorted by scope by the last re-cluster
        self.counted_at = -float("inf")
        self.checked_at = -float("inf")
        self.thread: threading.Thread | None = None
        self.runs: list[dict[str, Any]] = []
        self.error: BaseException | None = None

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a running re-cluster (tests and benchmarks)."""
        t = self.thread
        if t is not None:
            t.join(timeout)


def auto_state(db: Database) -> AutoCluster:
    state = getattr(db, "_auto_cluster", None)
    if state is None:
        state = db._auto_cluster = AutoCluster()
    return state


def store_rows(db: Database, every_s: float = CHECK_EVERY_S) -> int:
    """Rows in memories, counted at most once every `every_s` seconds per store (search uses it to
    choose how to read result rows)."""
    state = auto_state(db)
    now = time.monotonic()
    if state.total_rows is None or now - state.counted_at >= every_s:
        state.total_rows = int(db.scalar("SELECT count(*) FROM memories") or 0)
        state.clustered_rows = int(db.meta("clustered_rows") or 0)
        state.counted_at = now
    return state.total_rows


def unclustered_rows(db: Database, every_s: float = CHECK_EVERY_S) -> int:
    """Rows in memories beyond the last re-cluster (the tail in append order), counted with
    `store_rows`: search reads result rows in its scope scan when the scope's rows are contiguous."""
    total = store_rows(db, every_s)
    return max(0, total - auto_state(db).clustered_rows)


def maybe_auto_cluster(db: Database, *, min_rows: int, share: float, every_s: float = CHECK_EVERY_S) -> bool:
    """Start a background re-cluster when one is due (see the module doc). Returns True if started.
    Costs nothing between checks and one count(*) per check."""
    if min_rows <= 0 or db.read_only:
        return False
    state = auto_state(db)
    now = time.monotonic()
    with state.lock:
        if state.running() or now - state.checked_at < every_s:
            return False
        state.checked_at = now
    total = store_rows(db, every_s)
    if total < min_rows:
        return False
    clustered = int(db.meta("clustered_rows") or 0)
    if not due(total, clustered, min_rows, share):
        return False
    if db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]):
        return False            # rebuilding the HNSW index takes minutes: left to optimize()

    def work() -> None:
        try:
            out = optimize_store(db)
            state.runs.append(out)
            log.info("automatic re-cluster of %s: %s", db.path, out)
        except BaseException as exc:  # noqa: BLE001 - a background maintenance step must not crash anything
            state.error = exc
            log.warning("automatic re-cluster of %s failed (%s: %s); searches stay correct, only slower",
                        db.path, type(exc).__name__, exc)

    with state.lock:
        if state.running():
            return False
        state.thread = threading.Thread(target=work, name="memstore-auto-cluster", daemon=True)
        state.thread.start()
    return True

def ensure_hnsw(db: Database, *, force: bool = False) -> bool:
    """Create the HNSW index when missing (or when force=True). Returns True if it was (re)built."""
    if not db.has_vss:
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
