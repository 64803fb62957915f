"""Throughput, latency and CPU per operation of `memstore serve` with 1, 2, 4, 8, 16 client
processes, next to the same work in-process; and the speed-up Amdahl's law predicts from the
measured serial part (the owner process).

    python bench/server.py                          # hashing embedder: measures the store, not the model
    python bench/server.py --embedder local         # the bundled ONNX embedder
    python bench/server.py --workers 0              # the model work in the server process (no workers)
    python bench/server.py --clients 1,8 --seconds 5 --ops add
    python bench/server.py --code /work/wt/old      # the same bench against another checkout (old code)
    python bench/server.py --during sql             # search p95 while one client runs long analyst sql()
    python bench/server.py --fronts 2               # HTTP and the model work in 2 front processes
    python bench/server.py --fronts 2 --ops mixed   # every 10th call an add: what writes do to the fronts' copies

Each client process runs add (then search) in a loop on its own user for `--seconds`: `add` sends
one short chat turn (`--infer` on: the rule-based extractor, spaCy and the embedder run; `--infer
off`: add(infer=False), the message is embedded and stored). The figures per cell: operations/s,
the p50/p95 of each call as the client sees it, and, from /proc (psutil), the CPU the server
process (the **owner**: HTTP, reads, commits) and its worker processes (extract, spaCy, embed)
spent per operation, and with `--fronts N` the front processes' (HTTP, JSON, extract, spaCy,
embed, the query's vector); `clients`: the client processes' own CPU per operation (HTTP, JSON),
which shares the machine with the server's. CPU per operation does not depend on the load other programs put on the
machine; operations/s and latencies do, so the load average is printed with each cell.

Amdahl: an add costs `owner` ms of the one owner process (serial: one process, one GIL, one
writer) and `workers` ms (workers and fronts) that any of N such processes can do. On C cores the
owner caps throughput at 1000/owner adds/s and the workers at (C-1)*1000/workers; the speed-up over one core is
min(C, (owner+workers)/owner) — Amdahl's 1/(s + (1-s)/C) with s = owner/(owner+workers), bounded by
the owner's ceiling.
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

SEED_USERS, SEED_PER_USER = 20, 50
MIXED_ADD_EVERY = 10                    # --ops mixed: every 10th call of a client is an add(infer=False)
HERE = os.path.abspath(__file__)
TURNS = ("I live in {city} and I work at {org} as a {job}", "My sister {name} is a {job} in {city}",
         "I'm allergic to {food}; I play {game} on Sundays", "We moved to {city} last month for my job at {org}")
WORDS = {"city": ["Lisbon", "Oslo", "Porto", "Lima", "Kyoto", "Quito", "Turin"], "org": ["Acme", "Initech", "Globex"],
         "job": ["nurse", "pilot", "baker", "teacher", "chemist"], "name": ["Maria", "Ana", "Rui", "Ines"],
         "food": ["peanuts", "shrimp", "gluten"], "game": ["chess", "go", "tennis", "bridge"]}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _turn(n: int, w: int) -> str:
    t = TURNS[n % len(TURNS)]
    return t.format(**{k: v[(n * 7 + w) % len(v)] for k, v in WORDS.items()})


def _client_for(store: str):
    try:
        from memstore.api.connect import client_for
    except ImportError:
        from memstore.client.connect import client_for
    return client_for(store)


def worker(args: argparse.Namespace) -> int:
    """One client process: `--op` in a loop for `--seconds`; prints one JSON line of latencies."""
    m = _client_for(args.store)
    lat: list[float] = []
    user = f"bench-{args.worker}"
    infer = args.infer == "on"
    if args.op == "sql":                       # the analyst: long queries back to back
        print("ready", flush=True)
        sys.stdin.readline()
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            m.sql("select count(*) from memories a, memories b, memories c where c.user_id = 'seed-1' and "
                  "length(a.memory) + length(b.memory) + length(c.memory) > 100")       # ~50M rows
            lat.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"lat": lat}))
        return 0
    for i in range(3):                  # warm: connection, the server's first call of this kind
        m.search("warm up", user_id=user) if args.op in ("search", "mixed") else m.add(f"warm {args.worker}-{i}", user_id=user,
                                                                             infer=False)
    print("ready", flush=True)                 # the parent samples CPU once every client is ready
    sys.stdin.readline()
    deadline = time.monotonic() + args.seconds
    n = 0
    cpu0 = time.process_time()
    while time.monotonic() < deadline:
        n += 1
        t0 = time.perf_counter()
        if args.op == "add":
            text = (_turn(n, args.worker) if infer else
                    f"bench note {args.worker}-{n}: the item {n * 7919 % 10007} is on shelf {n % 97}")
            m.add(text, user_id=user, infer=infer)
        elif args.op == "mixed" and n % MIXED_ADD_EVERY == 0:     # writes among searches: snapshots go stale
            m.add(f"bench note {args.worker}-{n}: the item {n * 7919 % 10007} is on shelf {n % 97}", user_id=user,
                  infer=False)
        else:
            m.search(f"where is item {n % 10007}", user_id=f"seed-{n % SEED_USERS}", top_k=10)
        lat.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"lat": lat, "cpu": time.process_time() - cpu0}))
    return 0


def _seed(memory) -> None:
    for u in range(SEED_USERS):
        for i in range(SEED_PER_USER):
            memory.add(f"seed fact {i}: the item {i * 31 % 10007} is on shelf {i % 97}", user_id=f"seed-{u}",
                       infer=False)


def _cpu(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (from /proc)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _spawn(store: str, w: int, op: str, seconds: float, infer: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, HERE, "--worker", str(w), "--op", op, "--store", store,
                             "--seconds", str(seconds), "--infer", infer], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def _run_clients(store: str, n: int, op: str, seconds: float, infer: str, owner: int, workers: list[int],
                 during: str | None = None, fronts: list[int] | None = None) -> dict:
    procs = [_spawn(store, w, op, seconds, infer) for w in range(n)]
    analyst = _spawn(store, 999, during, seconds, infer) if during else None
    everyone = procs + ([analyst] if analyst else [])
    for p in everyone:                         # start-up and warm-up calls are not counted
        assert p.stdout.readline().strip() == "ready"
    fronts = fronts or []
    s0 = _front_searches(store)
    g0 = _owner_stats(store)
    c_owner, c_workers, c_fronts = _cpu([owner]), _cpu(workers), _cpu(fronts)
    for p in everyone:
        p.stdin.write("go\n")
        p.stdin.flush()
    lat: list[float] = []
    c_clients = 0.0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 300)
        got = json.loads(out.strip().splitlines()[-1])
        lat += got["lat"]
        c_clients += got.get("cpu", 0.0)
    d_owner, d_workers, d_fronts = _cpu([owner]) - c_owner, _cpu(workers) - c_workers, _cpu(fronts) - c_fronts
    if analyst is not None:
        analyst.communicate(timeout=seconds + 300)
    n = max(len(lat), 1)
    s1 = _front_searches(store)
    g1 = _owner_stats(store)
    groups = g1.get("groups", 0) - g0.get("groups", 0)
    committed = g1.get("adds", 0) - g0.get("adds", 0)
    door = {k: g1.get(k, 0) - g0.get(k, 0) for k in g1 if k.endswith("_ms") and k not in ("cpu_ms",)}
    local = s1.get("fresh", 0) - s0.get("fresh", 0)
    asked = local + s1.get("searched", 0) - s0.get("searched", 0)
    sent, sent_mb = s1.get("sent", 0) - s0.get("sent", 0), (s1.get("sent_bytes", 0) - s0.get("sent_bytes", 0)) / 1e6
    return {"ops_s": len(lat) / seconds, "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "n": len(lat),
            "owner_ms": d_owner * 1e3 / n, "workers_ms": d_workers * 1e3 / n, "fronts_ms": d_fronts * 1e3 / n,
            "clients_ms": c_clients * 1e3 / n,
            "front_hits": f"{local}/{asked}" if asked else "-",
            "snap_sent": f"{sent} ({sent_mb:.1f} MB)" if asked else "-",
            # the owner's own accounts (/health, new code only): adds a group, the committer's CPU a
            # committed add, and each side-door message's CPU per operation
            "per_group": committed / groups if groups else None,
            "commit_ms": (g1.get("cpu_ms", 0) - g0.get("cpu_ms", 0)) / committed if committed else None,
            "door_ms": {k[:-3]: round(v / n, 3) for k, v in door.items() if v}}


def _owner_stats(store: str) -> dict:
    """The group committer's and the side door's counters from /health ({} on old code)."""
    try:
        info = _client_for(store).server_info()
    except Exception:
        return {}
    return {**(info.get("owner_ops") or {}), **(info.get("group_commit") or {})}


def _front_searches(store: str) -> dict:
    """The server's counts of searches its fronts answered from snapshot copies (/health; {} when none)."""
    try:
        return _client_for(store).server_info().get("front_searches") or {}
    except Exception:
        return {}


def _in_process(store: str, config: dict, op: str, seconds: float, infer: str) -> dict:
    from memstore.memory import Memory

    m = Memory(store, config=config, embedded=True)
    lat: list[float] = []
    for i in range(3):
        m.search("warm up", user_id="inproc") if op == "search" else m.add(f"warm {i}", user_id="inproc", infer=False)
    deadline = time.monotonic() + seconds
    n = 0
    c0 = time.process_time()
    while time.monotonic() < deadline:
        n += 1
        t0 = time.perf_counter()
        if op == "add":
            if infer == "on":
                m.add(_turn(n, 99), user_id="inproc")
            else:
                m.add(f"inproc note {n}: the item {n * 7919 % 10007} is on shelf {n % 97}", user_id="inproc",
                      infer=False)
        else:
            m.search(f"where is item {n % 10007}", user_id=f"seed-{n % SEED_USERS}", top_k=10)
        lat.append((time.perf_counter() - t0) * 1e3)
    cpu = time.process_time() - c0
    m.close()
    return {"ops_s": len(lat) / seconds, "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "n": len(lat),
            "owner_ms": cpu * 1e3 / max(len(lat), 1), "workers_ms": 0.0, "fronts_ms": 0.0}


def amdahl(owner_ms: float, workers_ms: float, cores: int) -> tuple[float, float]:
    """(speed-up over one core, ops/s ceiling) on `cores` cores: the owner is serial, the
    workers' part spreads over cores-1 workers.

    >>> [round(x, 1) for x in amdahl(1.0, 9.0, 16)]
    [6.4, 1000.0]
    """
    total = owner_ms + workers_ms
    s = owner_ms / total
    speedup = 1.0 / (s + (1.0 - s) / cores)
    ceiling = min(1000.0 / owner_ms, (cores - 1) * 1000.0 / workers_ms if workers_ms else float("inf"))
    return min(speedup, ceiling * total / 1000.0), ceiling


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="hashing", choices=("hashing", "local", "static"))
    ap.add_argument("--clients", default="1,2,4,8,16")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--ops", default="add,search",
                    help="which phases: add, search, mixed (every 10th call an add(infer=False), the rest searches)")
    ap.add_argument("--infer", default="on", choices=("on", "off"),
                    help="add with extraction (on: the rule-based extractor, spaCy, embedder) or infer=False")
    ap.add_argument("--workers", type=int, default=None,
                    help="memstore serve --workers N (default: one per core, as serve; with --code: not passed)")
    ap.add_argument("--fronts", default="0", metavar="N|auto",
                    help="memstore serve --fronts N, or auto (serve's default: one a core, at most 4); "
                         "0 (the default here): every request in the owner")
    ap.add_argument("--threads", type=int, default=None,
                    help="config key threads (DuckDB threads of the store) for the server and the seed")
    ap.add_argument("--code", default=None, help="a checkout whose memstore to bench (default: this one)")
    ap.add_argument("--during", default=None, choices=("sql",),
                    help="run one more client that sends long analyst sql() calls during every cell")
    ap.add_argument("--no-in-process", action="store_true", help="skip the in-process row")
    ap.add_argument("--label", default="")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--op", default="add", help=argparse.SUPPRESS)
    ap.add_argument("--store", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    code = os.path.abspath(args.code or os.path.dirname(os.path.dirname(HERE)))
    os.environ["PYTHONPATH"] = code + os.pathsep + os.environ.get("PYTHONPATH", "")   # servers, clients too
    sys.path.insert(0, code)
    os.chdir(code)                  # `python -m memstore.cli serve` imports from its working directory first
    if args.worker is not None:
        return worker(args)

    from memstore.memory import Memory
    from memstore.testing.server_process import ServerProcess

    config = {"embedder": {"provider": args.embedder}}
    if args.threads is not None:
        config["threads"] = args.threads
    work = args.workdir or tempfile.mkdtemp(prefix="memstore-bench-server-")
    os.makedirs(work, exist_ok=True)
    clients = [int(c) for c in args.clients.split(",")]
    # serve's default is one worker per core; say it, since the test harness (ServerProcess) starts
    # servers with --workers 0 unless told (old code that has no --workers: nothing passed)
    fronts_on = args.fronts != "0"
    workers = args.workers if args.workers is not None else (
        None if args.code or fronts_on else os.cpu_count() or 1)
    serve_args = ([] if workers is None else ["--workers", str(workers)]) + (
        ["--fronts", str(args.fronts)] if fronts_on or not args.code else [])
    import memstore
    print(f"bench/server.py {args.label} code={os.path.dirname(os.path.dirname(memstore.__file__))} "
          f"embedder={args.embedder} infer={args.infer} workers={workers} fronts={args.fronts} during={args.during} "
          f"threads={args.threads} "
          f"{args.seconds:.0f} s per cell  cores={os.cpu_count()}", flush=True)
    rows = []
    for op in args.ops.split(","):
        store = os.path.join(work, f"{op}.duckdb")
        for suffix in ("", ".wal"):
            if os.path.exists(store + suffix):
                os.unlink(store + suffix)
        seeded = Memory(store, config=config, embedded=True)
        _seed(seeded)
        seeded.close()
        if not args.no_in_process:
            load = os.getloadavg()[0]
            rows.append((op, "in-process", _in_process(store, config, op, args.seconds, args.infer), load))
        with ServerProcess(store, config=config, args=serve_args, startup_s=300) as srv:
            info = srv.client().server_info()
            owner, wpids, fpids = info["pid"], info.get("worker_pids") or [], info.get("front_pids") or []
            print(f"  server pid {owner}, workers {info.get('workers', 'none (old code)')}", flush=True)
            for n in clients:
                load = os.getloadavg()[0]
                cell = _run_clients(store, n, op, args.seconds, args.infer, owner, wpids, args.during, fpids)
                rows.append((op, f"{n} client{'s' if n > 1 else ''}", cell, load))
                print(f"  {op} {n:>2} clients: {cell['ops_s']:.0f}/s p50 {cell['p50']:.1f} p95 {cell['p95']:.1f} ms owner "
                      f"{cell['owner_ms']:.2f} ms/op workers {cell['workers_ms']:.2f} fronts {cell['fronts_ms']:.2f} ms/op "
                      f"clients {cell['clients_ms']:.2f} ms/op "
                      f"searches from front copies {cell['front_hits']}, snapshots sent {cell['snap_sent']} "
                      f"(load {load:.1f})",
                      flush=True)
                if cell.get("per_group"):
                    print(f"      owner: {cell['per_group']:.1f} adds a group, committer {cell['commit_ms']:.2f} ms "
                          f"CPU a committed add; side door CPU ms per op {cell['door_ms']}", flush=True)
    print(f"\n{args.label}\n| op | mode | ops/s | p50 ms | p95 ms | owner CPU ms/op | workers CPU ms/op | "
          f"fronts CPU ms/op | Amdahl 16 cores | Amdahl 64 cores | calls | load avg |\n"
          f"|---|---|---|---|---|---|---|---|---|---|---|---|")
    for op, mode, c, load in rows:
        par = c["workers_ms"] + c["fronts_ms"]
        a16, cap16 = amdahl(c["owner_ms"], par, 16) if c["owner_ms"] > 0 else (float("nan"),) * 2
        a64, cap64 = amdahl(c["owner_ms"], par, 64) if c["owner_ms"] > 0 else (float("nan"),) * 2
        print(f"| {op} | {mode} | {c['ops_s']:.0f} | {c['p50']:.1f} | {c['p95']:.1f} | {c['owner_ms']:.2f} | "
              f"{c['workers_ms']:.2f} | {c['fronts_ms']:.2f} | {a16:.1f}x ({cap16:.0f}/s) | {a64:.1f}x ({cap64:.0f}/s) | {c['n']} | "
              f"{load:.1f} |")
    for op in args.ops.split(","):
        cells = [c for o, mode, c, _ in rows if o == op and mode.endswith(("client", "clients"))]
        if len(cells) > 1:
            print(f"{op}: {max(clients)} clients / 1 client throughput = {cells[-1]['ops_s'] / cells[0]['ops_s']:.2f}x; "
                  f"median owner CPU {statistics.median(c['owner_ms'] for c in cells):.2f} ms/op")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
