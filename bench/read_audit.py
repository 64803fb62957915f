"""What the audit of reads costs a search: p50 with `audit.reads` on against off, interleaved.

    python bench/read_audit.py                          # 50k memories over 500 users, 600 searches each way
    python bench/read_audit.py --memories 100000 --users 1000 --searches 1000 --sample 0.1

Two copies of one synthetic store (bench/synthetic_store.py), one opened with the audit off and one
with it on; the same (user, query) pairs are searched on both, alternating which goes first, so
load on the shared machine falls on both alike; the copies swap roles each round (`--rounds`). Reports the p50 / p95 of each and their ratio
(target: on <= 1.05 x off), process CPU per search, the read log's counters (rows recorded and
written in how many batches, none lost) and the load average beside each figure.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthetic_store import build_store

from memstore import Memory

WORDS = ["tea", "flight", "parrot", "oboe", "boston", "kite", "garden", "doctor", "tuesday", "sister",
         "salary", "bicycle", "allergy", "novel", "piano", "lisbon"]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=50_000)
    ap.add_argument("--users", type=int, default=500)
    ap.add_argument("--searches", type=int, default=600)
    ap.add_argument("--sample", type=float, default=1.0, help="audit.sample of the audited store")
    ap.add_argument("--query", choices=("text", "hash"), default="text", help="audit.reads_query")
    ap.add_argument("--flush-s", type=float, default=5.0, help="audit.flush_s of the audited store")
    ap.add_argument("--rounds", type=int, default=2, help="rounds; the two copies swap roles each round")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)     # the synthetic store's embedder name
    tmp = Path(tempfile.mkdtemp(prefix="read-audit-"))
    try:
        base = str(tmp / "off.duckdb")
        print(f"building {a.memories:,} memories over {a.users} users (load {_load()})")
        build_store(base, a.memories, a.users, log=lambda *_: None).close()
        shutil.copy(base, tmp / "on.duckdb")
        cfg = {"embedder": {"provider": "hashing"}}
        audit = {"reads": "on", "sample": a.sample, "reads_query": a.query, "flush_s": a.flush_s}
        rnd = random.Random(3)
        pairs = [(f"user{rnd.randrange(a.users)}", " ".join(rnd.sample(WORDS, 3))) for _ in range(a.searches)]
        times: dict[str, list[float]] = {"off": [], "on": []}
        cpu: dict[str, float] = {"off": 0.0, "on": 0.0}
        ratios: list[float] = []
        from memstore.retrieval.snapshot import snapshots_for

        for r in range(a.rounds):       # the copies swap roles each round: a copy's own layout cancels out
            files = (base, str(tmp / "on.duckdb")) if r % 2 == 0 else (str(tmp / "on.duckdb"), base)
            off = Memory(files[0], config=cfg)
            on = Memory(files[1], config={**cfg, "audit": audit})
            for user, q in pairs[:50]:          # warm both: models, caches, snapshots
                off.search(q, user_id=user)
                on.search(q, user_id=user)
            print(f"round {r + 1}: searching {a.searches} x 2, interleaved (load {_load()})")
            t_round = {"off": [], "on": []}
            for i, (user, q) in enumerate(pairs):
                order = (("off", off), ("on", on)) if i % 2 else (("on", on), ("off", off))
                for name, m in order:
                    c0, t0 = time.process_time(), time.perf_counter()
                    m.search(q, user_id=user)
                    t_round[name].append((time.perf_counter() - t0) * 1e3)
                    cpu[name] += time.process_time() - c0
            print(f"  p50 off {statistics.median(t_round['off']):.3f} ms, on {statistics.median(t_round['on']):.3f} ms: "
                  f"ratio {statistics.median(t_round['on']) / statistics.median(t_round['off']):.3f}")
            for k in times:
                times[k] += t_round[k]
            ratios.append(statistics.median(t_round["on"]) / statistics.median(t_round["off"]))
            on.read_log.flush()
            stats = dict(on.read_log.stats)
            rows = on.sql("SELECT count(*) AS n FROM reads WHERE method = 'search'")["n"][0]
            print(f"  read log: {stats}; search rows in the table: {rows}")
            for name, m in (("off", off), ("on", on)):
                print(f"  {name}: scope cache {dict(m.db.scope_cache.stats)}; "
                      f"snapshots {dict(snapshots_for(m.db.scope_cache).stats)}")
            off.close()
            on.close()
        n = a.searches * a.rounds
        p50 = {k: statistics.median(v) for k, v in times.items()}
        p95 = {k: statistics.quantiles(v, n=20)[-1] for k, v in times.items()}
        print(f"audit off  p50 {p50['off']:7.3f} ms  p95 {p95['off']:7.3f} ms  cpu {cpu['off'] / n * 1e3:6.3f} ms/search")
        print(f"audit on   p50 {p50['on']:7.3f} ms  p95 {p95['on']:7.3f} ms  cpu {cpu['on'] / n * 1e3:6.3f} ms/search")
        print(f"ratio on/off  p50 per round {', '.join(f'{r:.3f}' for r in ratios)}: geometric mean "
              f"{statistics.geometric_mean(ratios):.3f} (target <= 1.05); pooled p50 {p50['on'] / p50['off']:.3f}  "
              f"p95 {p95['on'] / p95['off']:.3f}  cpu {cpu['on'] / cpu['off']:.3f}   load {_load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
