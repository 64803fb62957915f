"""Throughput of a cluster through HAProxy with 1, 2 and 3 shards, the balancer's added latency,
the owner's CPU per operation on each shard, and what N machines would give.

    python bench/cluster.py                          # 1,2,3 shards, 4 client processes, 6 s per phase
    python bench/cluster.py --shards 1,3 --clients 6 --seconds 10

Every shard and HAProxy run on this machine (hashing embedder: the store is measured, not the model),
so on a small shared machine the shards compete for the same cores and the absolute gain from more
shards is small. The load-independent figures are the CPU per operation (psutil, per process, less
what each process burns idle over the same time: health checks, timers) and the
capacity they imply: one shard's owner process can do 1/cpu_per_op operations per CPU-second, so N
machines with C free cores each are predicted to do about N*C/cpu_per_op, until HAProxy's own CPU per
operation caps it. Prints `uptime` load with every phase.
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
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HASHING = {"embedder": {"provider": "hashing"}}


def _load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def _cpu(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _phase(url: str, token: str, tmp: Path, clients: int, users: list[str], seconds: float, ops: str,
           tag: str) -> list[dict]:
    env = {**os.environ, "MEMSTORE_TOKEN": token, "PYTHONPATH": os.getcwd()}
    logs = [tmp / f"{tag}-{i}.jsonl" for i in range(clients)]
    procs = [subprocess.Popen([sys.executable, "-m", "memstore.testing.cluster_worker", url, str(log), "--kind",
                               "client", "--users", ",".join(users), "--seconds", str(seconds), "--worker", str(i),
                               "--ops", ops], env=env) for i, log in enumerate(logs)]
    for p in procs:
        p.wait()
    recs = []
    for log in logs:
        if log.exists():
            recs += [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return recs


def _p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def added_latency(cluster, users: list[str], n: int = 400) -> tuple[float, float]:
    """p50 ms of get_all(user, top_k=1) straight to the owning shard and through the balancer."""
    from memstore.api.http_client import MemoryClient
    from memstore.core.placement import shard_of_key

    via = cluster.client()
    direct = [MemoryClient(s.url, token=cluster.token) for s in cluster.servers]
    a, b = [], []
    for k in range(n):
        u = users[k % len(users)]
        t0 = time.perf_counter()
        direct[shard_of_key(u, len(cluster.servers))].get_all(user_id=u, top_k=1)
        t1 = time.perf_counter()
        via.get_all(user_id=u, top_k=1)
        t2 = time.perf_counter()
        a.append((t1 - t0) * 1000)
        b.append((t2 - t1) * 1000)
    return _p50(a), _p50(b)


def run(shards: int, args: argparse.Namespace, root: Path) -> dict:
    from memstore.core.placement import shard_of_key
    from memstore.testing.cluster_process import ClusterProcess

    users = [f"bench-{i}" for i in range(args.users)]
    out: dict = {"shards": shards}
    # Health checks every 5 s: at the tests' 0.3 s they would cost the shards more CPU than the load.
    with ClusterProcess(root / f"c{shards}", shards=shards, config=HASHING, check_interval_ms=5000) as c:
        pids = [s.proc.pid for s in c.servers]
        idle0, hidle0, t0 = [_cpu(p) for p in pids], _cpu(c.haproxy.pid), time.monotonic()
        time.sleep(3.0)                       # what the processes burn with no load, subtracted below
        idle_s = time.monotonic() - t0
        idle_rate = [(_cpu(p) - x) / idle_s for p, x in zip(pids, idle0)]
        hidle_rate = (_cpu(c.haproxy.pid) - hidle0) / idle_s
        out["idle_cpu_ms_per_s"] = [round(1000 * r, 1) for r in idle_rate]
        for phase, ops in (("add", "add"), ("search", "add,search")):
            cpu0 = [_cpu(p) for p in pids]
            hap0 = _cpu(c.haproxy.pid)
            load = _load()
            t1 = time.monotonic()
            recs = _phase(c.url, c.token, root, args.clients, users, args.seconds, ops, f"c{shards}-{phase}")
            wall = time.monotonic() - t1
            cpu = [max(0.0, _cpu(p) - x - r * wall) for p, x, r in zip(pids, cpu0, idle_rate)]
            hap = max(0.0, _cpu(c.haproxy.pid) - hap0 - hidle_rate * wall)
            acks = [r for r in recs if r["op"] == phase.replace("add", "ack")]
            errs = [r for r in recs if r["op"] == "error"]
            all_ops = [r for r in recs if r["op"] in ("ack", "search")]
            per_shard = [sum(1 for r in all_ops if shard_of_key(r["user"], shards) == i) for i in range(shards)]
            out[phase] = {
                "ops_per_s": len(acks) / args.seconds, "p50_ms": _p50([r["ms"] for r in acks]), "errors": len(errs),
                "cpu_ms_per_op_by_shard": [round(1000 * c_ / max(1, k), 2) for c_, k in zip(cpu, per_shard)],
                "haproxy_cpu_ms_per_op": round(1000 * hap / max(1, len(all_ops)), 3), "load": load}
        out["direct_p50_ms"], out["balancer_p50_ms"] = added_latency(c, users)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", default="1,2,3")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--users", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--machines", default="1,2,4,8,16")
    ap.add_argument("--cores", type=int, default=1, help="free cores per shard machine in the prediction")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        for n in (int(x) for x in args.shards.split(",")):
            print(f"-- {n} shard(s) ({_load()})", flush=True)
            r = run(n, args, Path(tmp))
            results.append(r)
            for phase in ("add", "search"):
                p = r[phase]
                print(f"   {phase:6s} {p['ops_per_s']:7.1f}/s  p50 {p['p50_ms']:6.1f} ms  errors {p['errors']}  "
                      f"owner CPU ms/op by shard {p['cpu_ms_per_op_by_shard']}  haproxy CPU ms/op "
                      f"{p['haproxy_cpu_ms_per_op']}  ({p['load']})")
            print(f"   idle CPU ms/s by shard (subtracted): {r['idle_cpu_ms_per_s']}")
            print(f"   get_all p50: {r['direct_p50_ms']:.2f} ms direct, {r['balancer_p50_ms']:.2f} ms through HAProxy "
                  f"(+{r['balancer_p50_ms'] - r['direct_p50_ms']:.2f} ms)")
    print("\nsummary (adds/s, searches/s; load-independent: CPU ms per op)")
    print("| shards | adds/s | searches/s* | add CPU ms/op (mean over shards) | HAProxy CPU ms/op | balancer added p50 |")
    print("|---|---|---|---|---|---|")
    for r in results:
        a, s = r["add"], r["search"]
        print(f"| {r['shards']} | {a['ops_per_s']:.1f} | {s['ops_per_s']:.1f} | "
              f"{statistics.mean(a['cpu_ms_per_op_by_shard']):.2f} | {a['haproxy_cpu_ms_per_op']:.3f} | "
              f"{r['balancer_p50_ms'] - r['direct_p50_ms']:+.2f} ms |")
    print("* the search phase alternates add and search; searches/s counts the searches only")
    last = results[-1]
    add_ms = statistics.mean(last["add"]["cpu_ms_per_op_by_shard"])
    mixed_ms = statistics.mean(last["search"]["cpu_ms_per_op_by_shard"])
    hap_ms = max(last["add"]["haproxy_cpu_ms_per_op"], 1e-3)
    print(f"\ncapacity per shard (owner CPU only, {args.cores} core(s)): {1000 * args.cores / add_ms:.0f} adds/s, "
          f"{1000 * args.cores / mixed_ms:.0f} mixed ops/s; one HAProxy core: {1000 / hap_ms:.0f} requests/s")
    for n in (int(x) for x in args.machines.split(",")):
        adds = min(n * 1000 * args.cores / add_ms, 1000 / hap_ms)
        print(f"  {n:3d} machine(s): ~{adds:,.0f} adds/s predicted (shards x capacity, capped by one HAProxy core)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
