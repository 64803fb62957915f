"""Search latency on synthetic stores (100k and 1M memories over 1k users) and peak RSS.

    python bench/search_latency.py                 # 100k and 1M
    python bench/search_latency.py --sizes 100000  # one size
    python bench/search_latency.py --locomo --sizes     # LoCoMo-size scopes only (target 2)

--locomo: the five LoCoMo dev conversations' observation facts stored as memories (infer=False, bundled
ONNX embedder; ~270 memories a scope, ~1.3k in the file), then every question searched with every
channel on: whole search() (query embedding + analysis + statements + fusion) and each stage's p50.

Reports p50/p95 of the store side of a fused search (the statements that read the scope and the
query's postings, plus fusion in NumPy: the figure the target is about, excluding query embedding),
fusion alone, the query analysis and the whole `search()` call (hashing query embedder), wall and
CPU time (process CPU counts every thread: the fairer figure on a shared machine), the load
average, and the analyst cross-scope search_all (HNSW) recall@10 against the exact scan.
"""
from __future__ import annotations

import argparse
import os
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


EXTRA_CONFIG: dict = {}     # --threads N: {"threads": N} for every Memory opened here


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def _query(rng: np.random.Generator) -> str:
    return " ".join([f"w{rng.zipf(1.3) % 2000}" for _ in range(3)] + [f"entity{rng.zipf(1.5) % 5000}"])


def measure(m: Memory, rng: np.random.Generator, users: int, queries: int, label: str) -> dict[str, float]:
    """Store side (statements + fusion), fusion, analysis, whole search(): wall and CPU p50/p95."""
    store_t, fuse_t, ana_t, total_t, cpu_t = [], [], [], [], []
    for i in range(queries + 5):
        q, user = _query(rng), f"user{rng.integers(0, users)}"
        timings: dict[str, float] = {}
        candidate_table(m._rt, q, filters={"user_id": user}, limit=20, timings=timings)
        q2, user2 = _query(rng), f"user{rng.integers(0, users)}"
        t, c = time.perf_counter(), time.process_time()
        m.search(q2, filters={"user_id": user2}, top_k=20)
        if i >= 5:  # warm-up excluded (the first search loads the scope cache)
            total_t.append(time.perf_counter() - t)
            cpu_t.append(time.process_time() - c)
            store_t.append(timings["sql"] + timings.get("fusion", 0.0))
            fuse_t.append(timings.get("fusion", 0.0))
            ana_t.append(timings["analyze"])
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
    print(f"[{label}] store side (statements + fusion, excl. embedding): {ms(store_t)}")
    print(f"[{label}] fusion alone (NumPy):                              {ms(fuse_t)}")
    print(f"[{label}] query analysis (tokenizer + lemma rules):          {ms(ana_t)}")
    print(f"[{label}] whole search() (hashing embedder), wall:           {ms(total_t)}")
    print(f"[{label}] whole search() (hashing embedder), process CPU:    {ms(cpu_t)}")
    from memstore.retrieval.snapshot import snapshots_for

    snaps = dict(snapshots_for(m._rt.db.scope_cache).stats)
    print(f"[{label}] search snapshots (hot scopes, no statement): {snaps.get('hits', 0)} searches, "
          f"{snaps.get('builds', 0)} built (the other searches read the store)")
    print(f"[{label}] load average: {os.getloadavg()}", flush=True)
    return {"store_p50": pct(store_t, .5), "search_p50": pct(total_t, .5)}


LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-data" / "locomo" / "locomo_dev5.json"


def run_locomo(tmp: str, data: Path = LOCOMO, rounds: int = 2) -> None:
    """Target 2: whole search() on LoCoMo-size scopes with the bundled embedder, every channel on."""
    import json
    import re

    samples = json.loads(Path(data).read_text())
    m = Memory(str(Path(tmp) / "locomo.duckdb"), config={"messages_kept": 0, **EXTRA_CONFIG})
    questions = []
    for s in samples:
        uid = s["sample_id"]
        for key, items_by in s["observation"].items():
            n = re.search(r"\d+", key).group(0)
            when = s["conversation"].get(f"session_{n}_date_time")
            for speaker, items in items_by.items():
                msgs = [{"role": "user", "content": text, "name": speaker} for text, _dia in items]
                if msgs:
                    m.add(msgs, user_id=uid, infer=False, timestamp=when)
        questions += [(uid, qa["question"]) for qa in s["qa"] if qa.get("category") in (1, 2, 3, 4)]
    sizes = [len(m.get_all(user_id=s["sample_id"], top_k=100_000)["results"]) for s in samples]
    print(f"\n## LoCoMo-size scopes: {sizes} memories, {len(questions)} questions x {rounds}", flush=True)
    for uid, q in questions[:10]:
        m.search(q, user_id=uid, top_k=10)  # warm-up: scope cache, ONNX session, tokenizer
    wall, cpu, stages = [], [], {}
    for _ in range(rounds):
        for uid, q in questions:
            t, c = time.perf_counter(), time.process_time()
            out = m.search(q, user_id=uid, top_k=10, explain=True)
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            for k, v in out["timings"].items():
                stages.setdefault(k, []).append(v)
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
    print(f"[locomo] whole search() (ONNX embedder, every channel), wall: {ms(wall)}")
    print(f"[locomo] whole search() (ONNX embedder, every channel), CPU:  {ms(cpu)}")
    for k, v in stages.items():
        print(f"[locomo]   stage {k:<8} {ms(v)}")
    from memstore.retrieval.snapshot import snapshots_for

    snaps = dict(snapshots_for(m._rt.db.scope_cache).stats)
    print(f"[locomo] search snapshots: {snaps.get('hits', 0)} searches from memory, {snaps.get('builds', 0)} built")
    print(f"[locomo] load average: {os.getloadavg()}", flush=True)
    m.close()


def run(size: int, users: int, queries: int, tmp: str, hnsw: bool = True) -> None:
    path = str(Path(tmp) / f"s{size}.duckdb")
    print(f"\n## {size:,} memories over {users:,} users", flush=True)
    t0 = time.perf_counter()
    build_store(path, size, users, log=lambda s: print(s, file=sys.stderr, flush=True)).close()
    print(f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    import warnings

    def open_store(auto: bool) -> Memory:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the synthetic store's vectors come from no embedder
            return Memory(path, config={"embedder": {"provider": "hashing"}, **EXTRA_CONFIG,
                                        "search": {} if auto else {"auto_cluster_min_rows": 0}})

    rng = np.random.default_rng(1)
    print(f"load average before: {os.getloadavg()}")
    m = open_store(auto=False)
    measure(m, rng, users, queries, "append order, automatic re-cluster off")
    m.close()
    # default config: the first search starts the background re-cluster; searches go on meanwhile
    from memstore.store.optimize import auto_state

    m = open_store(auto=True)
    t = time.perf_counter()
    m.search("w1 w2", user_id="user0")
    state = auto_state(m._rt.db)
    during = []
    while state.running():
        c = time.perf_counter()
        m.search(_query(rng), user_id=f"user{rng.integers(0, users)}", top_k=20)
        during.append(time.perf_counter() - c)
    state.wait()
    print(f"automatic re-cluster (started by the first search, no optimize() call): done after "
          f"{time.perf_counter() - t:.1f} s ({state.runs[-1] if state.runs else state.error}); "
          f"{len(during)} searches ran meanwhile, p50 {pct(during, .5) * 1000 if during else 0:.1f} ms")
    measure(m, rng, users, queries, "after the automatic re-cluster")
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
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
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--locomo", action="store_true", help="also measure LoCoMo-size scopes (target 2)")
    ap.add_argument("--users", type=int, default=1_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--hnsw-max", type=int, default=100_000,
                    help="measure search_all (HNSW build takes minutes per 100k) only up to this size")
    ap.add_argument("--workdir", default=None,
                    help="where the temporary stores go (default: the system temp dir; 1M needs ~3 GB)")
    ap.add_argument("--threads", type=int, default=0, metavar="N",
                    help="DuckDB threads (config key `threads`; 0: the config's default)")
    args = ap.parse_args()
    if args.threads:
        EXTRA_CONFIG["threads"] = args.threads
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="memstore-latency-") as tmp:
        if args.locomo:
            run_locomo(tmp)
        for size in args.sizes:
            run(size, args.users, args.queries, tmp, hnsw=size <= args.hnsw_max)


if __name__ == "__main__":
    main()
