"""What scoped tokens cost per request: the admin token vs a token that carries a scope.

    python bench/auth.py                     # both parts, hashing embedder
    python bench/auth.py --requests 600
    python bench/auth.py --admin-only        # the server part with the admin token alone: runs on
                                             # a checkout without scoped tokens too (old vs new)

1. In-process CPU (load-independent): µs of CPU per call of the server's check of the
   `Authorization` header (`Access.verify`: constant-time compare, sha256, lookup, expiry) and of
   the scope enforcement (`GuardedMemory`: scope filled in, filters checked) around a call that
   does nothing, for the admin token and a scoped one.
2. End to end, a real `memstore serve`: `search` of one seeded user, the admin token (user_id
   given) and alice's scoped token (user_id filled in by the server) interleaved in blocks of 20,
   so a change of machine load hits both alike. Prints p50 / p95 as the client sees them, the
   server's CPU per request (from /proc), and p50 scoped − p50 admin. Target: ≤ 0.1 ms added.
   A control (the admin token against itself, same interleaving) shows how much is noise.

Prints the load average: on a shared machine read the CPU figures and the difference, not the
absolute latencies.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = {"embedder": {"provider": "hashing"}}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


class _Nothing:
    """A memory whose methods return at once: what is left to time is the enforcement."""

    path = ":memory:"

    def search(self, query: str, **kwargs: object) -> dict:
        return {"results": []}


def in_process(store: str, n: int) -> dict[str, float]:
    """µs of CPU per call: verify(header) and a guarded search, admin vs scoped."""
    from memstore import Memory
    from memstore.server.auth import Access
    from memstore.server.scoped_memory import ADMIN, GuardedMemory

    with Memory(store, config=CONFIG, embedded=True) as m:
        scoped = m.create_token(f"bench-{time.time_ns()}", user_id="alice")["token"]
        for i in range(200):        # a table of realistic size: the lookup is by hash
            m.create_token(f"filler-{time.time_ns()}-{i}", user_id=f"u{i}")
        access = Access(m, "admin-" + "x" * 40)
        out = {}
        for label, header in (("admin", "Bearer admin-" + "x" * 40), ("scoped", f"Bearer {scoped}")):
            grant = access.verify(header)
            t0 = time.process_time()
            for _ in range(n):
                access.verify(header)
            out[f"verify_{label}_us"] = (time.process_time() - t0) / n * 1e6
            guarded = GuardedMemory(_Nothing(), lambda g=grant: g)
            t0 = time.process_time()
            for _ in range(n):
                guarded.search("where", top_k=10, **({"user_id": "alice"} if grant is ADMIN else {}))
            out[f"guard_{label}_us"] = (time.process_time() - t0) / n * 1e6
    return out


def _server_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client_class() -> type:
    try:
        from memstore.api.http_client import MemoryClient
    except ImportError:         # a checkout from before the re-layering (bench --admin-only, old vs new)
        from memstore.client.http_memory import MemoryClient
    return MemoryClient


def end_to_end(store: str, requests: int, admin_only: bool = False) -> dict[str, float]:
    """Interleaved admin / scoped searches against a real server; client latency and server CPU."""
    from memstore import Memory
    from memstore.testing.server_process import ServerProcess

    MemoryClient = _client_class()
    with Memory(store, config=CONFIG, embedded=True) as m:
        m.add([{"role": "user", "content": f"note {i}: the red box is on shelf {i}"} for i in range(50)],
              user_id="alice", infer=False)
        token = None if admin_only else m.create_token(f"bench-e2e-{time.time_ns()}", user_id="alice")["token"]
    kinds = ("admin",) if admin_only else ("admin", "scoped", "control")     # control: the admin token again
    lat: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, float] = {k: 0.0 for k in kinds}
    with ServerProcess(store, config=CONFIG) as srv:
        admin = MemoryClient(srv.url, token=srv.token)
        scoped = admin if admin_only else MemoryClient(srv.url, token=token)
        calls = {"admin": lambda q: admin.search(q, user_id="alice", top_k=5),
                 "scoped": lambda q: scoped.search(q, top_k=5),
                 "control": lambda q: admin.search(q, user_id="alice", top_k=5)}
        calls = {k: calls[k] for k in kinds}
        for i in range(20):                 # warm both connections and the server's caches
            for fn in calls.values():
                fn(f"where is box {i}")
        block = 20
        for b in range(requests // block):
            order = kinds[b % len(kinds):] + kinds[:b % len(kinds)]       # rotate: no kind always first
            for label in order:         # alternate blocks; the server's CPU is read per block
                c0 = _server_cpu_s(srv.proc.pid)
                for i in range(block):
                    t0 = time.perf_counter()
                    calls[label](f"where is box {i}")
                    lat[label].append((time.perf_counter() - t0) * 1e3)
                cpu[label] += _server_cpu_s(srv.proc.pid) - c0
        admin.close()
        scoped.close()
    out = {}
    for label in lat:
        out[f"{label}_p50_ms"] = _pct(lat[label], 0.5)
        out[f"{label}_p95_ms"] = _pct(lat[label], 0.95)
        out[f"{label}_server_cpu_ms"] = cpu[label] / len(lat[label]) * 1e3
    if admin_only:
        return out
    out["p50_added_ms"] = out["scoped_p50_ms"] - out["admin_p50_ms"]
    out["mean_added_ms"] = statistics.mean(lat["scoped"]) - statistics.mean(lat["admin"])
    out["server_cpu_added_ms"] = out["scoped_server_cpu_ms"] - out["admin_server_cpu_ms"]
    out["control_p50_added_ms"] = out["control_p50_ms"] - out["admin_p50_ms"]      # admin vs admin: the noise
    out["control_cpu_ms"] = out["control_server_cpu_ms"] - out["admin_server_cpu_ms"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000, help="in-process calls per figure")
    ap.add_argument("--requests", type=int, default=400, help="HTTP requests per token kind")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--admin-only", action="store_true", help="the server part with the admin token only")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="memstore-bench-auth-")
    print(f"load average before: {_load()}  ({os.cpu_count()} cores)")
    if args.admin_only:
        e2e = end_to_end(os.path.join(work, "e2e.duckdb"), args.requests, admin_only=True)
        print(f"search through memstore serve, admin token, {args.requests} requests: p50 {e2e['admin_p50_ms']:.3f} ms"
              f"   p95 {e2e['admin_p95_ms']:.3f} ms   server CPU {e2e['admin_server_cpu_ms']:.3f} ms/request")
        print(f"load average after: {_load()}")
        return 0
    cpu = in_process(os.path.join(work, "cpu.duckdb"), args.calls)
    print("in-process CPU per call (µs):")
    for kind in ("admin", "scoped"):
        print(f"  {kind:6}  verify {cpu[f'verify_{kind}_us']:6.2f}   guard {cpu[f'guard_{kind}_us']:6.2f}   "
              f"total {cpu[f'verify_{kind}_us'] + cpu[f'guard_{kind}_us']:6.2f}")
    added = (cpu["verify_scoped_us"] + cpu["guard_scoped_us"]) - (cpu["verify_admin_us"] + cpu["guard_admin_us"])
    print(f"  scoped - admin: {added:.2f} µs = {added / 1000:.4f} ms (target ≤ 0.1 ms)")
    if not args.skip_server:
        print(f"load average before the server part: {_load()}")
        e2e = end_to_end(os.path.join(work, "e2e.duckdb"), args.requests)
        print(f"search through memstore serve, {args.requests} requests each, interleaved:")
        for kind in ("admin", "scoped"):
            print(f"  {kind:6}  p50 {e2e[f'{kind}_p50_ms']:7.3f} ms   p95 {e2e[f'{kind}_p95_ms']:7.3f} ms   "
                  f"server CPU {e2e[f'{kind}_server_cpu_ms']:6.3f} ms/request")
        print(f"  p50 added {e2e['p50_added_ms']:+.3f} ms, mean added {e2e['mean_added_ms']:+.3f} ms, "
              f"server CPU added {e2e['server_cpu_added_ms']:+.3f} ms/request (target ≤ 0.1 ms)")
        print(f"  control (admin vs admin, the same interleaving): p50 {e2e['control_p50_added_ms']:+.3f} ms, "
              f"server CPU "
              f"{e2e['control_cpu_ms']:+.3f} ms/request — differences within this are noise")
    print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
