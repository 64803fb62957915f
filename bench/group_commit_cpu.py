"""The owner's CPU per add against the size of the group it commits (issue 27's serial part).

The server's owner process commits prepared adds in groups (memstore/server/group_commit.py); this
measures `Memory.commit_prepared` alone, in-process, on adds prepared beforehand (the offline
extractor, hashing embedder), so the figure is the commit's CPU per add and nothing else: no HTTP,
no models. Two kinds of turn: "plain" (new facts only) and "slots" (every turn moves a city or a
job, so most adds supersede stored memories: the batched writer's one closing statement per unit).

    python bench/group_commit_cpu.py                   # groups 1, 8, 32, 64; both kinds
    python bench/group_commit_cpu.py --groups 1 64 --threads 1

Process CPU per add is the figure to read on a shared machine (the load is printed with it).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import Memory

CITIES = ["Lisbon", "Porto", "Berlin", "Paris", "Oslo", "Rome", "Madrid", "Vienna"]
JOBS = ["nurse", "teacher", "pilot", "chef", "plumber", "lawyer"]
HOBBIES = ["tea", "jazz", "chess", "hiking", "pottery", "sailing", "baking", "running", "opera", "cycling"]


def turn(kind: str, i: int, rnd: random.Random) -> str:
    if kind == "slots":
        return (f"I live in {rnd.choice(CITIES)} and I work as a {rnd.choice(JOBS)}. "
                f"My sister Kim{i % 50} loves {rnd.choice(HOBBIES)}.")
    return (f"I love {rnd.choice(HOBBIES)} and {rnd.choice(HOBBIES)}. "
            f"My friend Kim{i % 50} enjoys {rnd.choice(HOBBIES)} on weekends {i}.")


def run(kind: str, groups: list[int], threads: int | None, users: int, warm: int) -> None:
    warnings.simplefilter("ignore")
    cfg: dict = {"embedder": {"provider": "hashing"}}
    if threads:
        cfg["threads"] = threads
    m = Memory(os.path.join(tempfile.mkdtemp(), "g.duckdb"), config=cfg)
    rnd = random.Random(1)
    names = [f"u{i}" for i in range(users)]
    pre = [m.prepare_add(turn(kind, i, rnd), user_id=names[i % users]) for i in range(warm)]
    for k in range(0, warm, 50):
        m.commit_prepared(pre[k:k + 50])
    stored = m.sql("select count(*) from memories").item()
    print(f"\n{kind}: {stored:,} memories stored in {users} scopes before measuring")
    print(f"{'group':>6} {'CPU ms/add':>11} {'wall ms/add':>12} {'facts/add':>10} {'superseded/add':>15} {'load':>6}")
    for g in groups:
        n = max(128, 4 * g)
        ready = [m.prepare_add(turn(kind, i, rnd), user_id=names[rnd.randrange(users)]) for i in range(n)]
        c0, t0 = time.process_time(), time.perf_counter()
        outs = []
        for k in range(0, n, g):
            outs += m.commit_prepared(ready[k:k + g])
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        bad = [o for o in outs if isinstance(o, BaseException)]
        if bad:
            raise SystemExit(f"a commit failed: {bad[0]}")
        sup = sum(1 for o in outs for r in o["results"] if r["event"] == "SUPERSEDE")
        facts = sum(len(r.facts) for r in ready)
        print(f"{g:>6} {1000 * cpu / n:>11.2f} {1000 * wall / n:>12.2f} {facts / n:>10.1f} {sup / n:>15.2f} "
              f"{os.getloadavg()[0]:>6.1f}")
    m.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--kinds", nargs="+", default=["plain", "slots"], choices=["plain", "slots"])
    ap.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: the config's)")
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--warm", type=int, default=2000, help="adds stored before measuring")
    a = ap.parse_args()
    for kind in a.kinds:
        run(kind, a.groups, a.threads, a.users, a.warm)


if __name__ == "__main__":
    main()
