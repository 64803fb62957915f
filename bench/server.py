"""Throughput and latency of `memstore serve` with 1, 2, 4, 8 client processes, next to the same
work in-process.

    python bench/server.py                       # hashing embedder: measures the store, not the model
    python bench/server.py --embedder local      # the bundled ONNX embedder
    python bench/server.py --clients 1,8 --seconds 5

Each client process runs add(infer=False) (then search) in a loop on its own user for `--seconds`;
the figures are the total operations per second and the p50/p95 of each call as the client sees
it. "in-process" is one thread calling an embedded Memory on the same kind of store. Prints the
load average before each phase: on a shared machine, read the ratios, not the absolute figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SEED_USERS, SEED_PER_USER = 20, 50


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def worker(args: argparse.Namespace) -> int:
    """One client process: `--op` in a loop for `--seconds`; prints one JSON line of latencies."""
    from memstore.api.connect import client_for

    m = client_for(args.store)
    lat: list[float] = []
    user = f"bench-{args.worker}"
    for i in range(3):                  # warm: connection, the server's first call of this kind
        m.search("warm up", user_id=user) if args.op == "search" else m.add(f"warm {args.worker}-{i}", user_id=user,
                                                                             infer=False)
    deadline = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
        t0 = time.perf_counter()
        if args.op == "add":
            m.add(f"bench note {args.worker}-{n}: the item {n * 7919 % 10007} is on shelf {n % 97}",
                  user_id=user, infer=False)
        else:
            m.search(f"where is item {n % 10007}", user_id=f"seed-{n % SEED_USERS}", top_k=10)
        lat.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"lat": lat}))
    return 0


def _seed(memory) -> None:  # noqa: ANN001
    for u in range(SEED_USERS):
        for i in range(SEED_PER_USER):
            memory.add(f"seed fact {i}: the item {i * 31 % 10007} is on shelf {i % 97}", user_id=f"seed-{u}",
                       infer=False)


def _run_clients(store: str, n: int, op: str, seconds: float) -> dict:
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(w), "--op", op, "--store", store,
                               "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True) for w in range(n)]
    lat: list[float] = []
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 300)
        lat += json.loads(out.strip().splitlines()[-1])["lat"]
    return {"ops_s": len(lat) / seconds, "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "n": len(lat)}


def _in_process(store: str, config: dict, op: str, seconds: float) -> dict:
    from memstore.memory import Memory

    m = Memory(store, config=config, embedded=True)
    lat: list[float] = []
    for i in range(3):
        m.search("warm up", user_id="inproc") if op == "search" else m.add(f"warm {i}", user_id="inproc", infer=False)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
        t0 = time.perf_counter()
        if op == "add":
            m.add(f"inproc note {n}: the item {n * 7919 % 10007} is on shelf {n % 97}", user_id="inproc", infer=False)
        else:
            m.search(f"where is item {n % 10007}", user_id=f"seed-{n % SEED_USERS}", top_k=10)
        lat.append((time.perf_counter() - t0) * 1e3)
    m.close()
    return {"ops_s": len(lat) / seconds, "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "n": len(lat)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="hashing", choices=("hashing", "local", "static"))
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--op", default="add", help=argparse.SUPPRESS)
    ap.add_argument("--store", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        return worker(args)

    from memstore.memory import Memory
    from memstore.testing.server_process import ServerProcess

    config = {"embedder": {"provider": args.embedder}}
    work = args.workdir or tempfile.mkdtemp(prefix="memstore-bench-server-")
    os.makedirs(work, exist_ok=True)
    clients = [int(c) for c in args.clients.split(",")]
    print(f"bench/server.py  embedder={args.embedder}  {args.seconds:.0f} s per cell  cores={os.cpu_count()}")
    rows = []
    for op in ("add", "search"):
        store = os.path.join(work, f"{op}.duckdb")
        for suffix in ("", ".wal"):
            if os.path.exists(store + suffix):
                os.unlink(store + suffix)
        seeded = Memory(store, config=config, embedded=True)
        _seed(seeded)
        seeded.close()
        load = os.getloadavg()[0]
        base = _in_process(store, config, op, args.seconds)
        rows.append((op, "in-process", base, load))
        with ServerProcess(store, config=config) as srv:
            for n in clients:
                load = os.getloadavg()[0]
                cell = _run_clients(store, n, op, args.seconds)
                rows.append((op, f"{n} client{'s' if n > 1 else ''}", cell, load))
            stats = srv.client().server_info()
        del stats
    print(f"\n| op | mode | ops/s | p50 ms | p95 ms | calls | load avg |\n|---|---|---|---|---|---|---|")
    for op, mode, c, load in rows:
        print(f"| {op} | {mode} | {c['ops_s']:.0f} | {c['p50']:.1f} | {c['p95']:.1f} | {c['n']} | {load:.1f} |")
    for op in ("add", "search"):
        one = next(c for o, mode, c, _ in rows if o == op and mode == "1 client")
        top = [c for o, mode, c, _ in rows if o == op and mode.startswith(f"{max(clients)} client")]
        base = next(c for o, mode, c, _ in rows if o == op and mode == "in-process")
        if top:
            print(f"{op}: {max(clients)} clients / 1 client throughput = {top[0]['ops_s'] / one['ops_s']:.2f}x; "
                  f"1 client p50 - in-process p50 = {one['p50'] - base['p50']:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
