"""Analysis path figures: Parquet export / verify / import, frames and read-only SQL on a synthetic store.

    python bench/parquet_roundtrip.py                          # 100k memories, 1,000 users
    python bench/parquet_roundtrip.py --memories 20000 --users 100 --partition-by none

Prints seconds per step, files and bytes written, and rows per second.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_store import build_store

from memstore.analysis.frames import read_frame
from memstore.analysis.parquet_export import export_parquet
from memstore.analysis.parquet_import import load_export, verify_export
from memstore.analysis.readonly_sql import run_readonly
from memstore.store.database import Database
from memstore.store.views import ensure_views


def timed(label: str, fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    print(f"{label:<44} {time.perf_counter() - t0:8.3f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=1_000)
    ap.add_argument("--partition-by", default="user_id", choices=("user_id", "scope_key", "none"))
    args = ap.parse_args()
    partition = None if args.partition_by == "none" else args.partition_by
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        print(f"building {args.memories:,} memories for {args.users:,} users ...")
        db = build_store(str(root / "src.duckdb"), args.memories, args.users, log=lambda *_: None)
        rows = sum(db.scalar(f'SELECT count(*) FROM "{t}"') for t in
                   ("memories", "keyword_postings", "entity_postings", "entities"))
        print(f"store: {rows:,} rows in memories + postings + entities")
        manifest = timed(f"export_parquet (partition_by={partition})", export_parquet, db, root / "exp",
                         partition_by=partition)
        size = sum(p.stat().st_size for p in (root / "exp").rglob("*.parquet"))
        print(f"  {len(manifest['files']):,} files, {size / 2**20:,.1f} MiB "
              f"(duckdb file {(root / 'src.duckdb').stat().st_size / 2**20:,.1f} MiB)")
        verified = timed("verify_export (sha256 + row counts)", verify_export, root / "exp")
        new = Database(str(root / "dst.duckdb"), dim=db.dim, embedder="synthetic")
        t0 = time.perf_counter()
        load_export(new, root / "exp", verified)
        took = time.perf_counter() - t0
        print(f"{'load_export (one transaction)':<44} {took:8.3f} s   {rows / took:,.0f} rows/s")
        timed("ensure_views (create sql/views once)", ensure_views, new)
        timed("frame('memories', user_id=user1)", read_frame, new, "memories", {"user_id": "user1"})
        timed("frame('memories') all, embeddings dropped", read_frame, new, "memories")
        timed("frame('memories') all, with embeddings", read_frame, new, "memories", embeddings=True)
        timed("sql: memories per user (group by)", run_readonly, new,
              "SELECT user_id, count(*) AS n FROM memories GROUP BY ALL ORDER BY n DESC")
        timed("sql: top entities (entity_degrees view)", run_readonly, new,
              "SELECT entity, sum(degree) AS d FROM entity_degrees GROUP BY ALL ORDER BY d DESC LIMIT 10")
        db.close()
        new.close()


if __name__ == "__main__":
    main()
