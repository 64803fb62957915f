"""Search latency on synthetic stores (100k and 1M memories over 1k users) and peak RSS.

    python bench/search_latency.py                 # 100k and 1M
    python bench/search_latency.py --sizes 100000  # one size
    python bench/search_latency.py --locomo --sizes     # LoCoMo-size scopes only (target 2)
    python bench/search_latency.py --sizes 1000000 10000000 --scope-size 1000 --hnsw-max 0
        # 1M in append order (the store re-clusters itself in slices at open), 10M written by scope;
        # prints each figure's growth with the size and the measured process's peak RSS
    python bench/search_latency.py --sizes 10000000 --by-scope-from 5000000 --scope-size 1000 --hnsw-max 0 \
        --prebuilt DIR --in-place       # 10M (22 GiB): built once into DIR, then measured there, no copy

    python bench/search_latency.py --sizes 1000000 --by-scope-from 1000000 --hnsw-max 0 --queries 200 \
        --prebuilt DIR --tail 100000 --tail-pass tail     # (then --tail-pass full: the old full pass)
        # the steady state: the 1M store sorted by scope plus 100k memories appended by random users;
        # searches before / during / after the pass that sorts them, the pass's time and RSS

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
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import Memory
from memstore.retrieval.search import candidate_table

EXTRA_CONFIG: dict = {}     # --threads N: {"threads": N} for every Memory opened here
PASS_THREADS = 0            # --pass-threads N: DuckDB threads while the --tail run's pass runs (0: the store's)
ADD_EVERY_S = 0.2           # --add-every S: a writer thread adds a memory every S seconds during the pass (0: none)


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
    return {"store_p50": pct(store_t, .5), "store_p95": pct(store_t, .95), "search_p50": pct(total_t, .5),
            "cpu_p50": pct(cpu_t, .5)}


_ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (/work/main), or two levels up for a worktree (/work/wt/<name>)
LOCOMO = next((p for p in (d / "shared" / "bench-data" / "locomo" / "locomo_dev5.json"
                           for d in (_ROOT.parent, _ROOT.parent.parent)) if p.is_file()),
              _ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo_dev5.json")


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


def _build(path: str, size: int, users: int, by_scope: bool) -> float:
    """Build the store in a child process (its memory is the builder's, not the measured
    process's); returns the builder's peak RSS in MiB."""
    import subprocess

    call = "build_store_sql({path!r}, {size}, {users}, " if by_scope else "build_store({path!r}, {size}, {users}, "
    code = ("import sys, resource; sys.path[:0] = {paths!r}; from synthetic_store import build_store, build_store_sql; "
            + call + "log=lambda s: print(s, file=sys.stderr, flush=True)).close(); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    here = Path(__file__).resolve().parent
    out = subprocess.run([sys.executable, "-c", code.format(paths=[str(here), str(here.parent)], path=path, size=size,
                                                              users=users, by_scope=by_scope)],
                         check=True, stdout=subprocess.PIPE, text=True)
    return int(out.stdout.split()[-1]) / 1024


def rss_mib() -> tuple[float, float]:
    """(current, peak) RSS of this process in MiB."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def during_pass(m: Memory, state, rng: np.random.Generator, users: int, t: float) -> tuple[list[float], object]:
    """Searches (and an add every 20) while the store's background pass runs; prints their figures,
    the pass's and the RSS reached meanwhile. Returns the store-side times and the pass's result."""
    during, during_store, add_wait = [], [], []
    rss_during = 0.0
    done = threading.Event()
    add_at: list[float] = []

    def writer() -> None:        # writes arrive on their own while the pass runs (a server's adds)
        wrng = np.random.default_rng(7)
        while not done.is_set() and state.running():
            c = time.perf_counter()
            m.add(f"w{wrng.integers(0, 2000)} w{wrng.integers(0, 2000)} entity3",
                  user_id=f"user{wrng.integers(0, users)}", infer=False)
            add_wait.append(time.perf_counter() - c)
            add_at.append(c)
            done.wait(ADD_EVERY_S)

    wt = threading.Thread(target=writer, daemon=True) if ADD_EVERY_S > 0 else None
    if wt is not None:
        wt.start()
    while state.running():
        timings: dict[str, float] = {}
        candidate_table(m._rt, _query(rng), filters={"user_id": f"user{rng.integers(0, users)}"}, limit=20,
                        timings=timings)
        during_store.append(timings["sql"] + timings.get("fusion", 0.0))
        c = time.perf_counter()
        m.search(_query(rng), user_id=f"user{rng.integers(0, users)}", top_k=20)
        during.append(time.perf_counter() - c)
        rss_during = max(rss_during, rss_mib()[0])
        if wt is None and len(during) % 20 == 0:    # an add now and then: writers wait for one slice at most
            c = time.perf_counter()
            m.add(f"w{rng.integers(0, 2000)} w{rng.integers(0, 2000)} entity3", user_id=f"user{rng.integers(0, users)}",
                  infer=False)
            add_wait.append(time.perf_counter() - c)
    state.wait()
    done.set()
    if wt is not None:
        wt.join()
    cur, peak = rss_mib()
    print(f"after the re-cluster: RSS now {cur:.0f} MiB, peak so far {peak:.0f} MiB; RSS during the pass up to "
          f"{rss_during:.0f} MiB", flush=True)
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
    run_out = state.runs[-1] if state.runs else state.error
    holds = run_out.pop("holds", []) if isinstance(run_out, dict) else []
    print(f"re-cluster (started by the store, no optimize() call): {time.perf_counter() - t:.1f} s "
          f"({run_out}); {len(during)} searches ran meanwhile: store side {ms(during_store) if during else '-'}, "
          f"whole search() {ms(during) if during else '-'}", flush=True)
    if add_wait:
        print(f"re-cluster: {len(add_wait)} adds meanwhile (writers wait for a slice): {ms(add_wait)}, "
              f"max {max(add_wait) * 1000:.0f} ms; over 250 ms: {sum(w > 0.25 for w in add_wait)}; "
              f"load average {os.getloadavg()}", flush=True)
        after = []
        for i in range(20):     # the same adds with no pass running: what an add costs here anyway
            c = time.perf_counter()
            m.add(f"w{i} w{i + 1} entity3", user_id=f"user{rng.integers(0, users)}", infer=False)
            after.append(time.perf_counter() - c)
        print(f"re-cluster: 20 adds after the pass (no wait): {ms(after)}, max {max(after) * 1000:.0f} ms", flush=True)
    if holds:
        for kind in ("slice", "checkpoint"):
            h = [x[2] for x in holds if x[0] == kind]
            if h:
                print(f"re-cluster: {len(h)} {kind}s held the write lock: {ms(h)}, max {max(h) * 1000:.0f} ms", flush=True)
        if add_at:
            worst = sorted(range(len(add_wait)), key=lambda i: -add_wait[i])[:3]
            for i in worst:         # what the pass held while the slowest adds waited
                a, b = add_at[i], add_at[i] + add_wait[i]
                over = [f"{k} {h:.2f}s" for k, s0, h in holds if s0 < b and s0 + h > a]
                print(f"re-cluster: an add of {add_wait[i] * 1000:.0f} ms overlapped {over or 'no hold of the pass'}")
    return during_store, run_out


def _open(path: str, auto: bool) -> Memory:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the synthetic store's vectors come from no embedder
        return Memory(path, config={"embedder": {"provider": "hashing"}, **EXTRA_CONFIG,
                                    "search": {} if auto else {"auto_cluster_min_rows": 0}})


def _append(path: str, n: int, users: int) -> None:
    """Append the tail in a child process (its memory is not the measured process's)."""
    import subprocess

    here = Path(__file__).resolve().parent
    code = (f"import sys; sys.path[:0] = {[str(here), str(here.parent)]!r}; from synthetic_store import append_tail; "
            f"append_tail({path!r}, {n}, {users})")
    subprocess.run([sys.executable, "-c", code], check=True)


def run_tail(size: int, users: int, queries: int, tmp: str, prebuilt: str | None, tail: int, mode: str) -> dict:
    """The steady state of a store that grows by adds: `size` memories sorted by scope (one recorded
    run) plus `tail` memories appended by random users. Searches before, during and after the pass
    that sorts them: `mode` "tail" (sorts the tail into a second run) or "full" (rewrites the whole
    table: what every pass did before tail passes). Both start from the same trigger (share 5%:
    main's 10% would not start at 100k of 1.1M)."""
    import shutil

    from memstore.store.optimize import auto_state

    path = str(Path(tmp) / f"s{size}.duckdb")
    print(f"\n## {size:,} memories sorted by scope + {tail:,} appended by random users ({users:,} users); "
          f"the pass: {mode}", flush=True)
    root = Path(prebuilt) if prebuilt else Path(tmp)
    base, saved = root / f"s{size}-u{users}-scope.duckdb", root / f"s{size}-u{users}-scope-tail{tail}.duckdb"
    t0 = time.perf_counter()
    if saved.exists():
        shutil.copyfile(saved, path)
        print(f"copied the store built before: {saved}")
    else:
        if not base.exists():
            _build(str(base), size, users, True)
        shutil.copyfile(base, path)
        _append(path, tail, users)
        if prebuilt:
            shutil.copyfile(path, saved)
    print(f"ready in {time.perf_counter() - t0:.0f} s; file {os.path.getsize(path) / 2**30:.2f} GiB; "
          f"load average {os.getloadavg()}", flush=True)
    fig: dict = {"size": size, "users": users, "tail": tail, "mode": mode}
    rng = np.random.default_rng(1)
    m = _open(path, auto=False)
    if mode == "adopt":     # as a store sorted by an earlier version: the count of sorted rows, no run ends
        m._rt.db.run("bench:forget_runs", sql="DELETE FROM store_meta WHERE key = 'cluster_runs'", writes=True)
        m._rt.db.run("queries/set_clustered_rows", {"rows": size}, writes=True)
    a = measure(m, rng, users, queries, f"sorted + {tail:,} tail, re-cluster off")
    fig.update(first_p50=a["store_p50"], first_p95=a["store_p95"])
    m.close()
    m = _open(path, auto=False)
    state = auto_state(m._rt.db)        # the store's own trigger, turned on here with the pass chosen
    state.min_rows, state.share, state.tail = 1, 0.05, mode in ("tail", "adopt")
    if PASS_THREADS:                    # else the store's own (recluster.PASS_THREADS)
        state.threads = PASS_THREADS
    for _ in range(5):                  # warm-up, as in measure(): the first searches of a process load things
        m.search(_query(rng), user_id=f"user{rng.integers(0, users)}", top_k=20)
    cur, peak = rss_mib()
    print(f"before the pass: RSS now {cur:.0f} MiB, peak so far {peak:.0f} MiB", flush=True)
    state.count(m._rt.db, force=True)
    t = time.perf_counter()
    if not state.check(m._rt.db):
        print("no pass due")
    during_store, run_out = during_pass(m, state, rng, users, t)
    if during_store:
        fig.update(during_p50=pct(during_store, .5), during_p95=pct(during_store, .95))
    b = measure(m, rng, users, queries, f"after the {mode} pass")
    fig.update(store_p50=b["store_p50"], store_p95=b["store_p95"], search_p50=b["search_p50"],
               pass_s=run_out.get("seconds") if isinstance(run_out, dict) else None,
               pass_mode=run_out.get("mode") if isinstance(run_out, dict) else None)
    print(f"[{mode}] the pass ran as: {fig['pass_mode']}", flush=True)
    if during_store:
        print(f"[{mode}] store side p95 during the pass / after it: {fig['during_p95'] / b['store_p95']:.1f}x "
              f"(target <= 2x); / before it (sorted + tail): {fig['during_p95'] / fig['first_p95']:.1f}x; "
              f"p50 during / after {fig['during_p50'] / b['store_p50']:.1f}x")
    print(f"[{mode}] before the pass / after it: p95 {fig['first_p95'] / b['store_p95']:.1f}x, "
          f"p50 {fig['first_p50'] / b['store_p50']:.1f}x (what the {tail:,} unsorted rows cost a search)")
    m.close()
    cur, peak = rss_mib()
    fig.update(peak_rss=peak)
    print(f"memstore process: RSS now {cur:.0f} MiB, peak so far {peak:.0f} MiB", flush=True)
    return fig


def run(size: int, users: int, queries: int, tmp: str, hnsw: bool = True, by_scope: bool = False,
        prebuilt: str | None = None, in_place: bool = False) -> dict:
    path = str(Path(tmp) / f"s{size}.duckdb")
    ms = lambda v: f"p50 {pct(v, .5) * 1000:.1f} ms, p95 {pct(v, .95) * 1000:.1f} ms"  # noqa: E731
    order = "written sorted by scope (lean SQL builder)" if by_scope else "append order"
    print(f"\n## {size:,} memories over {users:,} users ({size // users:,} a user), {order}", flush=True)
    t0 = time.perf_counter()
    saved = Path(prebuilt) / f"s{size}-u{users}-{'scope' if by_scope else 'append'}.duckdb" if prebuilt else None
    if saved is not None and in_place:      # measure the kept store itself (10M: no 22 GB copy)
        path = str(saved)
        build_rss = 0.0 if saved.exists() else _build(path, size, users, by_scope)
        print(f"measured in place: {saved}")
    elif saved is not None and saved.exists():
        import shutil

        shutil.copyfile(saved, path)
        build_rss = 0.0
        print(f"copied the store built before: {saved}")
    else:
        build_rss = _build(path, size, users, by_scope)
        if saved is not None:
            import shutil

            shutil.copyfile(path, saved)
    print(f"built in {time.perf_counter() - t0:.0f} s (builder process peak RSS {build_rss:.0f} MiB); "
          f"file {os.path.getsize(path) / 2**30:.2f} GiB", flush=True)
    import warnings

    def open_store(auto: bool) -> Memory:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the synthetic store's vectors come from no embedder
            return Memory(path, config={"embedder": {"provider": "hashing"}, **EXTRA_CONFIG,
                                        "search": {} if auto else {"auto_cluster_min_rows": 0}})

    fig: dict = {"size": size, "users": users}
    rng = np.random.default_rng(1)
    print(f"load average before: {os.getloadavg()}")
    m = open_store(auto=False)
    print(f"config: memory_limit {m.config.memory_limit}, scope cache budget {m.config.scope_cache_mb} MiB "
          f"({m.config.scope_cache_rows:,} rows at most), re-cluster slices of {m.config.search.auto_cluster_slice_rows:,} "
          f"memories when the tail passes {m.config.search.auto_cluster_share:.0%}")
    a = measure(m, rng, users, queries, f"{order}, re-cluster off")
    fig.update(first_p50=a["store_p50"], first_p95=a["store_p95"])
    m.close()
    # default config: opening the store (and every commit) checks the layout; a store in append
    # order re-clusters itself in slices in the background; searches go on meanwhile
    from memstore.store.optimize import auto_state

    cur, peak = rss_mib()
    print(f"before the re-cluster: RSS now {cur:.0f} MiB, peak so far {peak:.0f} MiB", flush=True)
    t = time.perf_counter()
    m = open_store(auto=True)
    state = auto_state(m._rt.db)
    during_store, run_out = during_pass(m, state, rng, users, t)
    during = during_store
    if during:
        fig.update(during_p50=pct(during_store, .5), during_p95=pct(during_store, .95))
    b = measure(m, rng, users, queries, "after the re-cluster" if state.runs else "no re-cluster due")
    fig.update(store_p50=b["store_p50"], store_p95=b["store_p95"], search_p50=b["search_p50"])
    if during:
        print(f"store side p95 during the re-cluster / maintained after it: {fig['during_p95'] / b['store_p95']:.1f}x "
              f"(target <= 2x); / before it, in append order: {fig['during_p95'] / fig['first_p95']:.1f}x")
    cache = m._rt.db.scope_cache
    print(f"scope cache: {cache.nbytes / 2**20:.0f} MiB held of a {cache.max_bytes / 2**20:.0f} MiB budget "
          f"({sum(e.size for e in cache.entries.values()):,} memories, {len(cache.entries)} scopes)")
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
    cur, peak = rss_mib()
    fig.update(peak_rss=peak, build_rss=build_rss)
    print(f"memstore process: RSS now {cur:.0f} MiB, peak so far {peak:.0f} MiB", flush=True)
    return fig


def growth(figs: list[dict]) -> None:
    """Each figure per store size, and its growth from the smallest size."""
    if not figs:
        return
    names = [("first_p50", "store side p50, before any re-cluster", 1000), ("first_p95", "  p95", 1000),
             ("during_p50", "store side p50 during the re-cluster", 1000), ("during_p95", "  p95", 1000),
             ("store_p50", "store side p50, maintained", 1000), ("store_p95", "  p95", 1000),
             ("search_p50", "whole search() p50, maintained", 1000), ("pass_s", "the pass (s)", 1), ("peak_rss", "memstore peak RSS (MiB)", 1),
             ("build_rss", "builder peak RSS (MiB)", 1)]
    print("\n## growth with the store size (ms unless said; x = ratio to the first size)")
    print(f"{'figure':<40}" + "".join(f"{f['size']:>12,} mem" for f in figs))
    for key, label, scale in names:
        vals = [f.get(key) for f in figs]
        if all(v is None for v in vals):
            continue
        base = next((v for v in vals if v), None)
        cells = "".join(f"{'-':>16}" if v is None else f"{v * scale:>9.1f} {v / base if base else 0:>4.1f}x"
                        .rjust(16) for v in vals)
        print(f"{label:<40}{cells}")


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
    ap.add_argument("--by-scope-from", type=int, default=5_000_000, metavar="N",
                    help="stores of at least N memories are written sorted by scope (the lean builder: "
                         "a bulk import in scope order, no re-cluster); smaller ones in append order")
    ap.add_argument("--scope-size", type=int, default=0, metavar="K",
                    help="memories a user: users = size / K for every size (0: --users for every size)")
    ap.add_argument("--prebuilt", default=None, metavar="DIR",
                    help="keep each built store in DIR and reuse it on the next run (a copy is measured)")
    ap.add_argument("--in-place", action="store_true",
                    help="with --prebuilt: build into DIR and measure that store itself, not a copy (a 10M "
                         "store is 22 GB; the run writes a few adds to it only while a re-cluster runs)")
    ap.add_argument("--tail", type=int, default=0, metavar="N",
                    help="the steady state instead: each size sorted by scope (lean builder) plus N memories "
                         "appended by random users; searches before / during / after the pass that sorts them")
    ap.add_argument("--tail-pass", choices=("tail", "full", "adopt"), default="tail",
                    help="with --tail: the pass a sorted store runs (tail: only the tail into a second run; "
                         "full: the whole table, as every pass did before; adopt: a tail pass on a store "
                         "sorted by an earlier version, which recorded no run ends)")
    ap.add_argument("--pass-threads", type=int, default=0, metavar="N",
                    help="with --tail: DuckDB threads while the pass runs (Maintenance.threads; 0: unchanged)")
    ap.add_argument("--threads", type=int, default=0, metavar="N",
                    help="DuckDB threads (config key `threads`; 0: the config's default)")
    ap.add_argument("--add-every", type=float, default=0.2, metavar="S",
                    help="during the pass a writer thread adds a memory every S seconds and the add-wait "
                         "p50/p95/max is printed (0: an add every 20 searches from the search loop instead)")
    ap.add_argument("--checkpoint-share", type=float, default=None, metavar="F",
                    help="a full pass checkpoints each time this share of the memories moved (0: at its end "
                         "only; default: memstore.store.recluster.CHECKPOINT_SHARE)")
    args = ap.parse_args()
    if args.checkpoint_share is not None:
        import memstore.store.recluster as recluster

        recluster.CHECKPOINT_SHARE = args.checkpoint_share
    global ADD_EVERY_S
    ADD_EVERY_S = args.add_every
    if args.threads:
        EXTRA_CONFIG["threads"] = args.threads
    global PASS_THREADS
    PASS_THREADS = args.pass_threads
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="memstore-latency-") as tmp:
        if args.locomo:
            run_locomo(tmp)
        figs = []
        for size in args.sizes:
            users = max(1, size // args.scope_size) if args.scope_size else args.users
            if args.tail:
                figs.append(run_tail(size, users, args.queries, tmp, args.prebuilt, args.tail, args.tail_pass))
            else:
                figs.append(run(size, users, args.queries, tmp, hnsw=size <= args.hnsw_max,
                                by_scope=size >= args.by_scope_from, prebuilt=args.prebuilt,
                                in_place=args.in_place))
            for f in Path(tmp).glob(f"s{size}.duckdb*"):      # the next size needs the disk
                f.unlink()
        growth(figs)


if __name__ == "__main__":
    main()
