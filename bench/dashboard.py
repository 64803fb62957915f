"""Dashboard speed on a 1,000-user store: every page through Streamlit's AppTest (the real script,
in-process), wall and CPU time per step, plus the scope list and the scope summary on their own.

    python bench/dashboard.py                       # builds /tmp/memstore-bench-dashboard/users1000.duckdb once
    python bench/dashboard.py --users 1000 --memories 110500 --store PATH --fresh

The store is synthetic (bench/synthetic_store.py: memories, keyword and entity postings, random
vectors) plus one message per memory and one extraction run per 10 messages (2 % malformed), in
the same scopes: 110,500 messages over 1,000 users, like the issue's store. Which dashboard runs is
whichever `memstore` package is imported (PYTHONPATH), so the same script compares two checkouts.

Targets (issue 16): the scope list <= 100 ms at 1,000 users; every page <= 1 s after the first.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_store import build_store


def add_messages_and_runs(db, seed: int = 11) -> None:
    """One message per memory (its text, its scope, its time) and one extraction run per 10."""
    rng = np.random.default_rng(seed)
    mem = db.con.sql("SELECT id, scope_key, user_id, memory, created_at FROM memories ORDER BY id").to_arrow_table()
    n = mem.num_rows
    ids = [f"msg{i:08d}" for i in range(n)]
    db.insert_arrow("messages", pa.table({
        "id": ids, "scope_key": mem["scope_key"], "user_id": mem["user_id"],
        "role": ["user"] * n, "content": pc.binary_join_element_wise(*([mem["memory"]] * 6), " "),  # ~300 chars
        "created_at": mem["created_at"],
        "source_file": ["synthetic.jsonl"] * n, "source_conversation": [f"c{i // 50}" for i in range(n)],
        "source_message_id": ids}))
    k = n // 10
    status = np.where(rng.random(k) < 0.02, "malformed", "ok")
    db.insert_arrow("extraction_runs", pa.table({
        "id": [f"run{i:07d}" for i in range(k)], "scope_key": mem["scope_key"].take(list(range(0, 10 * k, 10))),
        "user_id": mem["user_id"].take(list(range(0, 10 * k, 10))), "extractor": ["heuristic"] * k,
        "input_message_ids": [ids[10 * i:10 * i + 10] for i in range(k)], "status": status.tolist(),
        "n_facts": pa.array([1] * k, pa.int32()), "n_added": pa.array([1] * k, pa.int32()),
        "latency_ms": [5.0] * k, "created_at": mem["created_at"].take(list(range(0, 10 * k, 10)))}))
    db.con.execute("CHECKPOINT")


def ensure_store(path: str, users: int, memories: int, fresh: bool) -> None:
    if fresh:
        for suffix in ("", ".wal"):
            Path(path + suffix).unlink(missing_ok=True)
    if Path(path).exists():
        print(f"store: {path} (reused; --fresh to rebuild)")
        return
    t0 = time.perf_counter()
    db = build_store(path, n_memories=memories, n_users=users, log=lambda s: print(s, file=sys.stderr, flush=True))
    add_messages_and_runs(db)
    db.close()
    print(f"store: {path} built in {time.perf_counter() - t0:.1f} s")


class Timer:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []

    def __call__(self, label: str, fn) -> object:
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        self.rows.append((label, time.perf_counter() - w, time.process_time() - c))
        return out


def bench_data(path: str, repeat: int) -> None:
    """The scope list and the scope summary alone, on an open Memory (what every rerun / the Overview pays)."""
    from memstore import Memory
    from memstore.dashboard import data

    with Memory(path) as m:
        data.list_scopes(m)                  # views created, caches warm
        for name, fn in (("list_scopes", lambda: data.list_scopes(m)), ("scope_summary", lambda: data.scope_summary(m))):
            times, cpu = [], []
            for _ in range(repeat):
                t, c = time.perf_counter(), time.process_time()
                out = fn()
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            n = len(out) if isinstance(out, list) else out.height
            print(f"{name:<14} {n:>6,} scopes   wall median {statistics.median(times) * 1000:7.1f} ms   "
                  f"max {max(times) * 1000:7.1f} ms   CPU median {statistics.median(cpu) * 1000:7.1f} ms   ({repeat} runs)")


def bench_pages(path: str, query: str) -> Timer:
    from streamlit.testing.v1 import AppTest

    import memstore.dashboard
    from memstore.dashboard.main import PAGES

    app = str(Path(memstore.dashboard.__file__).resolve().parents[2] / "app.py")
    os.environ["MEMSTORE_PATH"] = path
    timer = Timer()
    at = AppTest.from_file(app, default_timeout=600)
    timer("first run (open store, Overview)", at.run)
    check(at)
    timer("Overview again (rerun)", at.run)
    check(at)
    scopes = at.selectbox(key="scope").options
    for title in [p.TITLE for p in PAGES]:
        timer(f"page: {title}", at.radio(key="page").set_value(title).run)
        check(at)
    for i, scope in enumerate((scopes[len(scopes) // 2], scopes[-1])):
        timer(f"scope switch {i + 1} (on {at.radio(key='page').value})", at.selectbox(key="scope").set_value(scope).run)
        check(at)
    warm = [t for t in threading.enumerate() if t.name == "memstore-warm-up"]
    timer("wait for the background warm-up to end", lambda: [t.join() for t in warm])
    at.radio(key="page").set_value("Search lab").run()
    timer(f"first search {query!r}", at.text_input(key="search_query").input(query).run)
    check(at)
    timer("second search", at.text_input(key="search_query").input(query + " now").run)
    check(at)
    return timer


def check(at) -> None:
    if at.exception:
        raise SystemExit(f"the page failed: {[e.value for e in at.exception]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--memories", type=int, default=110_500)
    ap.add_argument("--store", default=None, help="store file (default: under /tmp, reused between runs)")
    ap.add_argument("--fresh", action="store_true", help="rebuild the store")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--query", default="w1 w2 entity3")
    args = ap.parse_args()
    path = args.store or f"/tmp/memstore-bench-dashboard/users{args.users}_m{args.memories}.duckdb"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    ensure_store(path, args.users, args.memories, args.fresh)
    import memstore

    print(f"memstore from {Path(memstore.__file__).parent}; load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} at {dt.datetime.now():%H:%M:%S}")
    bench_data(path, args.repeat)
    timer = bench_pages(path, args.query)
    print(f"\n{'step':<58} {'wall s':>7} {'CPU s':>7}")
    for label, wall, cpu in timer.rows:
        print(f"{label:<58} {wall:7.2f} {cpu:7.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()
