"""`memstore ingest` on one machine vs `--on-ray` (memstore/on_ray/): messages/s, CPU per message on
the Ray workers and on the owner, Ray's own overhead, and what N nodes would do.

    python bench/ray_ingest.py                          # 2,000 messages, offline extractor, local MiniLM
    python bench/ray_ingest.py --messages 600 --llm 0.2 # also the scripted LLM at 0.2 s a call
    python bench/ray_ingest.py --embedder hashing       # without the embedder's cost

Each mode ingests the same generated ChatGPT export (bench/ingest.py's generator) into a fresh store;
the modes alternate (one-machine, Ray, one-machine, Ray, … `--rounds`) so both see the same machine
load, and `uptime`'s load is printed next to every figure. Ray runs on this machine
(`ray.init(num_cpus=CPUS)`), its workers in their own processes: their CPU is measured in the actor
around each batch (process time), the owner's around each commit (the driver owns the store file).

The model, from the per-message CPU: a node of `k` cores prepares k / cpu_worker messages a second;
an owner commits 1 / cpu_owner a second on its one committing core; N nodes and S owners (shards)
ingest min(N·k / cpu_worker, S / cpu_owner) messages a second, and the owners become the limit past
N* = S · cpu_worker / (k · cpu_owner) nodes.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _bench_ingest():
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "bench" / "ingest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def one_machine(export: Path, config: dict, args: argparse.Namespace) -> dict:
    from memstore import Memory

    store = Path(tempfile.mkdtemp(prefix="bench-ray-")) / "one.duckdb"
    m = Memory(str(store), config=config)
    m._rt.nlp  # noqa: B018 - models loaded before the clock, as in bench/ingest.py
    m._rt.extractor  # noqa: B018
    m._rt.embedder.embed(["warm up"])
    c0, t0 = time.process_time(), time.perf_counter()
    r = m.ingest(str(export), user_id="bench", progress=False, concurrency=args.concurrency)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    m.close()
    n = r.messages["stored"]
    return {"mode": "memstore ingest", "messages": n, "wall_s": wall, "msg_per_s": n / wall,
            "cpu_ms_per_msg": 1000 * cpu / n, "owner_cpu_ms_per_msg": 1000 * r.stages_cpu_s.get("write", 0) / n,
            "memories": r.memories["added"], "load": load()}


def on_ray(export: Path, config: dict, args: argparse.Namespace) -> dict:
    from memstore.on_ray.ingest import ingest_files

    store = Path(tempfile.mkdtemp(prefix="bench-ray-")) / "ray.duckdb"
    t0 = time.perf_counter()
    r = ingest_files(str(export), to=str(store), user_id="bench", config=config, address=None, actors=args.actors,
                     batch_conversations=args.batch_conversations, concurrency=args.concurrency, progress=False)
    wall = time.perf_counter() - t0
    n = r.messages["stored"]
    return {"mode": "--on-ray", "messages": n, "wall_s": wall, "msg_per_s": n / wall,
            "worker_cpu_ms_per_msg": 1000 * r.stages_cpu_s["workers"] / n,
            "owner_cpu_ms_per_msg": 1000 * r.stages_cpu_s["commit (owner)"] / n,
            "driver_cpu_ms_per_msg": 1000 * r.stages_cpu_s["driver"] / n,
            "memories": r.memories["added"], "load": load()}


def predict(worker_ms: float, owner_ms: float, driver_ms: float, cores: int = 2) -> list[str]:
    """Messages/s on N nodes: min(workers, owners, the one driver)."""
    driver = 1000 / max(driver_ms, 1e-9)
    lines = [f"  the driver (reading, planning, JSON, Ray Data's scheduling) alone: {driver:,.0f} msg/s"]
    for s in (1, 4, 16):
        owners = s * 1000 / owner_ms
        knee = s * worker_ms / (cores * owner_ms)
        row = ", ".join(f"N={n}: {min(n * cores * 1000 / worker_ms, owners, driver):,.0f}" for n in (1, 2, 4, 8, 16, 64))
        lines.append(f"  {s:>2} owner(s): {row} msg/s; owners cap {owners:,.0f} msg/s, reached past N≈{knee:.1f} "
                     f"nodes of {cores} cores")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=2000)
    p.add_argument("--embedder", default="local", help="local (MiniLM) or hashing")
    p.add_argument("--rounds", type=int, default=2, help="alternating runs of each mode")
    p.add_argument("--cpus", type=int, default=2, help="Ray's num_cpus (this machine's cores)")
    p.add_argument("--actors", type=int, default=None)
    p.add_argument("--batch-conversations", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--llm", type=float, default=None, help="also the scripted LLM with this latency per call (s)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    import ray

    bi = _bench_ingest()
    export = Path(tempfile.mkdtemp(prefix="bench-ray-")) / "conversations.json"
    info = bi.make_export(args.messages, export)
    print(f"export: {info['conversations']} conversations, {info['messages']} messages; {load()}", flush=True)
    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t0
    print(f"ray.init(num_cpus={args.cpus}): {ray_start:.1f} s; {load()}", flush=True)
    configs = [("offline", {"embedder": {"provider": args.embedder}})]
    server = None
    if args.llm is not None:
        server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "ingest.py"), "--serve", str(args.llm)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        url = server.stdout.readline().strip()
        configs.append((f"llm {args.llm}s", {"embedder": {"provider": args.embedder},
                                             "llm": {"provider": "openai", "base_url": url, "api_key": "bench",
                                                     "model": "scripted-model", "timeout": 30}}))
    results = []
    try:
        for label, config in configs:
            for rnd in range(args.rounds):
                for fn in (one_machine, on_ray):
                    res = {"extractor": label, "round": rnd, **fn(export, config, args)}
                    results.append(res)
                    print(json.dumps(res) if args.json else
                          f"{label:>10} {res['mode']:>16}: {res['msg_per_s']:7.1f} msg/s ({res['wall_s']:.1f} s)  "
                          + "  ".join(f"{k} {v:.2f}" for k, v in res.items() if k.endswith("_ms_per_msg"))
                          + f"  [{res['load']}]", flush=True)
    finally:
        if server is not None:
            server.stdin.close()
            server.wait(timeout=30)
        ray.shutdown()
    for label, _ in configs:
        one = [r for r in results if r["extractor"] == label and r["mode"] == "memstore ingest"]
        ray_ = [r for r in results if r["extractor"] == label and r["mode"] == "--on-ray"]
        best = lambda rs, k: min(r[k] for r in rs)  # noqa: E731 - least disturbed run
        w, o = best(ray_, "worker_cpu_ms_per_msg"), best(ray_, "owner_cpu_ms_per_msg")
        print(f"\n{label}: one machine {max(r['msg_per_s'] for r in one):.1f} msg/s, on Ray (same 2 cores) "
              f"{max(r['msg_per_s'] for r in ray_):.1f} msg/s; wall ratio Ray/one "
              f"{min(r['wall_s'] for r in ray_) / min(r['wall_s'] for r in one):.2f}x (Ray's overhead here: actor "
              f"start and model load per run, Arrow/JSON round trips; ray.init {ray_start:.1f} s not counted)")
        print(f"  CPU per message: workers {w:.2f} ms, owner {o:.2f} ms (one machine, all in one process: "
              f"{best(one, 'cpu_ms_per_msg'):.2f} ms, of which write {best(one, 'owner_cpu_ms_per_msg'):.2f} ms)")
        print("  predicted messages/s on N nodes (workers: N x cores / worker CPU; owners: shards / owner CPU):")
        d = best(ray_, "driver_cpu_ms_per_msg") - o        # the driver's own part (the commit is the owner's)
        print("\n".join(predict(w, o, d, cores=args.cpus)))
        if args.llm is not None and label.startswith("llm"):
            per_node = args.cpus * args.concurrency * 20 / args.llm     # actors x calls in flight x batch / latency
            print(f"  with the LLM, a node of {args.cpus} actors is latency-bound first: {args.cpus} x "
                  f"{args.concurrency} calls in flight x 20 messages / {args.llm} s = {per_node:,.0f} msg/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
