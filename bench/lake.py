"""Lake benchmark (issue 29): publish throughput into DuckLake on PostgreSQL, and analyst queries on
the lake against the same data in one DuckDB file.

    python bench/lake.py                      # 200k memories, 2 shards
    python bench/lake.py --memories 1000000   # the issue's size (slow on a loaded 2-core machine)

Builds one synthetic store (bench/synthetic_store.py: memories, postings, entities; plus one ADD
history row per memory and 10% superseded memories), splits it into shards by user, publishes each
shard into a fresh lake (a throwaway PostgreSQL cluster), then publishes a 1% change. Queries:
count by status per scope (the timeline view), one user's timeline, history joined with memories;
each run 3 times, median wall and CPU (this process, so PostgreSQL's share of the lake is not in
the CPU column). Then the dashboard's Overview data (memstore/lake/fleet.py: scope summary, growth,
runs by status) on the lake against the same frames from the one file, and the time to open the
lake for the dashboard. The machine's load average is printed with the figures.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthetic_store import build_store

import memstore.lake as lake
from memstore.dashboard import data
from memstore.lake.fleet import Fleet
from memstore.store.database import Database
from memstore.store.views import view_query
from memstore.testing.postgres import PostgresCluster

DIM = 16        # embeddings are not published by default: a small dimension keeps the build fast


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn):
    w, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - w, cpu() - c


QUERIES = {
    "count by status per scope": "SELECT user_id, status, count(*) AS n FROM timeline GROUP BY ALL",
    "one user's timeline": "SELECT valid_from, valid_to, memory, status FROM timeline WHERE user_id = $user "
                           "ORDER BY valid_from",
    "history join memories": "SELECT m.user_id, h.event, count(*) AS n FROM history h JOIN memories m "
                             "ON h.memory_id = m.id GROUP BY ALL",
}


def make_single(path: str, n: int, users: int) -> None:
    db = build_store(path, n_memories=n, n_users=users, dim=DIM, log=lambda *a: None)
    db.run("bench:history", sql="INSERT INTO history SELECT 'h' || id, id, 'ADD', NULL, memory, user_id, agent_id, "
                                "run_id, scope_key, NULL, NULL, created_at, false FROM memories")
    db.run("bench:supersede", sql="UPDATE memories SET invalidated_at = created_at + INTERVAL 1 DAY "
                                  "WHERE hash(id) % 10 = 0")
    db.close()


def split(single: str, folder: Path, shards: int) -> list[str]:
    out = []
    for k in range(shards):
        path = str(folder / f"shard{k}.duckdb")
        shutil.copy(single, path)
        con = duckdb.connect(path)
        for t in ("memories", "history", "keyword_postings", "entity_postings"):
            con.execute(f"DELETE FROM {t} WHERE hash(user_id) % {shards} != {k}")
        con.execute("CHECKPOINT")
        con.close()
        out.append(path)
    return out


def run_queries(execute, user: str) -> dict[str, tuple[float, float, int]]:
    res = {}
    for name, sql in QUERIES.items():
        walls, cpus, rows = [], [], 0
        for _ in range(3):
            r, w, c = timed(lambda: execute(sql, {"user": user} if "$user" in sql else None))
            walls.append(w)
            cpus.append(c)
            rows = len(r)
        res[name] = (statistics.median(walls), statistics.median(cpus), rows)
    return res


class OneFile:
    """The Overview's frames from one DuckDB file, as a Fleet gives them from the lake."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def frame(self, name: str):
        if name == "runs_by_status":
            return self.con.sql("SELECT status, extractor, count(*) AS runs FROM extraction_runs GROUP BY ALL").pl()
        return self.con.sql(view_query(name)).pl()


def overview(source) -> int:
    """What the Overview page computes before drawing (scopes table, growth lines, runs chart data)."""
    summary = data.scope_summary(source)
    growth = data.growth(source.frame("memories_per_day"))
    runs = source.frame("runs_by_status")
    return summary.height + growth.height + runs.height


def time_overview(source) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(3):
        _, w, c = timed(lambda: overview(source))
        walls.append(w)
        cpus.append(c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=200_000)
    ap.add_argument("--users", type=int, default=2_000)
    ap.add_argument("--shards", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memstore-lake-bench-"))
    print(f"load before: {os.getloadavg()}  memories={args.memories} users={args.users} shards={args.shards}")
    single = str(work / "single.duckdb")
    _, w, _ = timed(lambda: make_single(single, args.memories, args.users))
    print(f"built one store in {w:.1f}s")
    shards = split(single, work, args.shards)
    with PostgresCluster() as pg:
        name = "postgres:" + pg.dsn
        print("\npublish (initial, one shard after the other):")
        total_rows = total_w = 0.0
        for k, path in enumerate(shards):
            db = Database(path, dim=DIM, embedder="synthetic")
            rep, w, c = timed(lambda: lake.publish(db, name, data_path=work / "lake", shard=f"shard{k}"))
            rows = sum(rep.inserted.values())
            total_rows, total_w = total_rows + rows, total_w + w
            print(f"  shard{k}: {rows:>9,} rows  {w:7.1f}s wall  {c:7.1f}s CPU  {rows / w:9,.0f} rows/s  "
                  f"(memories {rep.inserted['memories']:,})")
            db.close()
        print(f"  all: {total_rows / total_w:,.0f} rows/s")
        db = Database(shards[0], dim=DIM, embedder="synthetic")
        db.run("bench:change", sql="UPDATE memories SET memory = memory || ' changed' WHERE hash(id) % 100 = 1")
        rep, w, c = timed(lambda: lake.publish(db, name, shard="shard0"))
        print(f"  1% change on shard0: +{sum(rep.inserted.values()):,} / -{sum(rep.deleted.values()):,} rows "
              f"in {w:.1f}s wall, {c:.1f}s CPU")
        rep, w, c = timed(lambda: lake.publish(db, name, shard="shard0"))
        print(f"  nothing changed: {w:.1f}s wall, {c:.1f}s CPU (reads the shard's keys and hashes)")
        db.close()
        # the same 1% change in the single file, so both sides hold the same data
        con = duckdb.connect(single)
        con.execute(f"UPDATE memories SET memory = memory || ' changed' WHERE hash(id) % 100 = 1 "
                    f"AND hash(user_id) % {args.shards} = 0")
        con.close()
        user = "user7"
        con = duckdb.connect(single, read_only=True)
        con.execute(f"CREATE TEMP VIEW timeline AS {view_query('timeline')}")
        one = run_queries(lambda q, p: con.execute(q, p).fetchall() if p else con.execute(q).fetchall(), user)
        with lake.connect(name) as lk:
            fleet = run_queries(lambda q, p: lk.sql(q, p).fetchall(), user)
            plan = lk.sql("EXPLAIN ANALYZE SELECT count(*) FROM memories WHERE user_id = $user", {"user": user}
                          ).fetchall()[0][1]
            files = [ln for ln in plan.splitlines() if "Files Read" in ln]
            n_files = len(lk.sql("SELECT * FROM ducklake_list_files('lake', 'memories')").fetchall())

        one_overview = time_overview(OneFile(con))
        board, open_w, open_c = timed(lambda: Fleet(name))
        lake_overview = time_overview(board)
        board.close()
        con.close()
        print(f"\nqueries (median of 3; load {os.getloadavg()}):")
        print(f"  {'query':28} {'one DuckDB file':>24} {'lake (2 shards)':>24} rows")
        for q in QUERIES:
            a, b = one[q], fleet[q]
            assert a[2] == b[2], (q, a, b)
            print(f"  {q:28} {a[0] * 1000:9.0f} ms {a[1] * 1000:7.0f} ms CPU {b[0] * 1000:9.0f} ms "
                  f"{b[1] * 1000:7.0f} ms CPU {a[2]}")
        print(f"  files read for one user's memories: {' '.join(s.strip(' │') for s in files)}"
              + (f" of {n_files}" if n_files else ""))
        print(f"\ndashboard Overview data (median of 3): one file {one_overview[0] * 1000:.0f} ms "
              f"({one_overview[1] * 1000:.0f} ms CPU), lake {lake_overview[0] * 1000:.0f} ms "
              f"({lake_overview[1] * 1000:.0f} ms CPU); opening the lake for the dashboard "
              f"{open_w * 1000:.0f} ms ({open_c * 1000:.0f} ms CPU)")
    shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
