"""Search latency on synthetic stores (100k and 1M memories over 1k users) and peak RSS.

    python bench/search_latency.py                 # 100k and 1M
    python bench/search_latency.py --sizes 100000  # one size

Reports fused search p50/p95 for the SQL part (candidates + fusion: the figure the target is about,
excluding query embedding), the query analysis (spaCy) and the whole call, and the analyst
cross-scope search_all (HNSW) recall@10 against the exact scan, with its latency.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthetic_store import build_store  # noqa: E402

from memstore import Memory  # noqa: E402
from memstore.retrieval.search import candidate_table  # noqa: E402


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def run(size: int, users: int, queries: int, tmp: str, hnsw: bool = True) -> None:
    path = str(Path(tmp) / f"s{size}.duckdb")
    print(f"\n## {size:,} memories over {users:,} users", flush=True)
    t0 = time.perf_counter()
    build_store(path, size, users, log=lambda s: print(s, file=sys.stderr, flush=True)).close()
    print(f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the synthetic store's vectors come from no embedder
        m = Memory(path, config={"embedder": {"provider": "hashing"}})
    rng = np.random.default_rng(1)
    sql_t, ana_t, total_t = [], [], []
    for i in range(queries + 5):
        q = " ".join([f"w{rng.zipf(1.3) % 2000}" for _ in range(3)] + [f"entity{rng.zipf(1.5) % 5000}"])
        user = f"user{rng.integers(0, users)}"
        timings: dict[str, float] = {}
        t = time.perf_counter()
        candidate_table(m._rt, q, filters={"user_id": user}, limit=20, timings=timings)
        if i >= 5:  # warm-up excluded
            total_t.append(time.perf_counter() - t)
            sql_t.append(timings["sql"])
            ana_t.append(timings["analyze"])
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
    print(f"fused search SQL (excl. query embedding), append order: {ms(sql_t)}")
    print(f"query analysis (spaCy lemmas + entities):              {ms(ana_t)}")
    print(f"whole call (hashing query embedder):                   {ms(total_t)}")
    t = time.perf_counter()
    m.optimize()
    print(f"optimize() (re-cluster by scope): {time.perf_counter() - t:.1f} s")
    sql_t = []
    for i in range(queries + 5):
        q = " ".join([f"w{rng.zipf(1.3) % 2000}" for _ in range(3)] + [f"entity{rng.zipf(1.5) % 5000}"])
        timings = {}
        candidate_table(m._rt, q, filters={"user_id": f"user{rng.integers(0, users)}"}, limit=20, timings=timings)
        if i >= 5:
            sql_t.append(timings["sql"])
    print(f"fused search SQL (excl. query embedding), after optimize: {ms(sql_t)}")
    if hnsw:
        exact_t, ann_t, recalls = [], [], []
        m.search_all("warm up", top_k=10)
        for _ in range(20):
            q = " ".join(f"w{rng.zipf(1.3) % 2000}" for _ in range(4))
            t = time.perf_counter()
            ann = m.search_all(q, top_k=10)
            ann_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            exact = m.search_all(q, top_k=10, exact=True)
            exact_t.append(time.perf_counter() - t)
            a = {r["id"] for r in ann["results"]}
            e = {r["id"] for r in exact["results"]}
            recalls.append(len(a & e) / max(1, len(e)))
        print(f"search_all HNSW: {ms(ann_t)}; exact scan: {ms(exact_t)}; recall@10 {statistics.mean(recalls):.3f}")
    m.close()
    print(f"peak RSS so far: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--users", type=int, default=1_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--hnsw-max", type=int, default=100_000,
                    help="measure search_all (HNSW build takes minutes per 100k) only up to this size")
    ap.add_argument("--workdir", default=None,
                    help="where the temporary stores go (default: the system temp dir; 1M needs ~3 GB)")
    args = ap.parse_args()
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="memstore-latency-") as tmp:
        for size in args.sizes:
            run(size, args.users, args.queries, tmp, hnsw=size <= args.hnsw_max)


if __name__ == "__main__":
    main()
