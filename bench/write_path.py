"""add() latency split into LLM, context, embedding, NLP and store time (p50/p95) at 1k and 100k
stored memories, and peak RSS.

    python bench/write_path.py                          # 1k and 100k stored memories
    python bench/write_path.py --sizes 100000 --adds 200

The LLM is the real `openai` client against ScriptedOpenAIServer on 127.0.0.1 (latency 0), so "llm"
is the client + HTTP + JSON cost, not a model's. The embedder and NLP are the offline defaults
(ONNX MiniLM int8, spaCy). Each store is pre-filled with bulk Arrow inserts into every table
(memories with random unit vectors, entities, entity and keyword postings, links, history,
messages, extraction runs) spread over --users users, then add() is called --adds times for random
existing users. Each size runs in its own process, so peak RSS is per size (it includes the
pre-fill; "RSS at end" is what the process holds after the adds).

Figures are wall time from the `timings` dict that add() returns, plus the process CPU time of the
write-lock steps (robust when the machine is shared). `--profile` lists the costliest statements.

Target (issue 2): store-side overhead = dedupe + slot supersession + build + store (the steps under
the write lock) p50 < 5 ms at 100k.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore import Memory  # noqa: E402
from memstore.ids import entity_id  # noqa: E402
from memstore.store.database import Database, vectors_table  # noqa: E402
from memstore.testing.openai_server import ScriptedOpenAIServer  # noqa: E402

CITIES = ["Boston", "Seattle", "Denver", "Austin", "Chicago", "Portland", "Atlanta", "Miami", "Phoenix", "Dallas",
          "Berlin", "Paris", "Lisbon", "Madrid", "Rome", "Tokyo", "Osaka", "Seoul", "Sydney", "Toronto"]
THINGS = ["jazz", "hiking", "sushi", "chess", "tennis", "pottery", "yoga", "cycling", "baking", "painting",
          "salsa", "climbing", "surfing", "poetry", "gardening", "running", "opera", "ramen", "tea", "coffee"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka", "Tyrell", "Cyberdyne"]
NAMES = ["Maria", "Bob", "Priya", "Chen", "Omar", "Lena", "Kofi", "Sara", "Ivan", "Yuki"]
VERBS = ["likes", "loves", "lives in", "works at", "visited", "plans to visit", "is learning", "bought",
         "recommends", "talked about"]
TIMING_KEYS = ("context", "llm", "nlp", "embed", "dedupe", "supersede", "build", "store", "total")
STORE_SIDE = ("dedupe", "supersede", "build", "store")
WRITE_STEPS_CPU = ("dedupe_facts", "supersede_by_slot", "build_rows", "attach_slots", "commit_rows")


def prefill(db: Database, n: int, n_users: int, *, seed: int = 7, chunk: int = 20_000) -> None:
    """Bulk-insert n memories (and their postings, links, history, runs) + 10 messages per user."""
    rng = np.random.default_rng(seed)
    dim, now = db.dim, dt.datetime(2026, 1, 1)
    objects = CITIES + THINGS + COMPANIES + NAMES
    ents = sorted(set(CITIES + COMPANIES + NAMES + THINGS))
    db.insert_arrow("entities", pa.table({
        "id": [entity_id(e.lower()) for e in ents], "name": ents, "norm": [e.lower() for e in ents],
        "label": ["PROPN"] * len(ents), "created_at": pa.array([now] * len(ents), pa.timestamp("us"))}))
    users_all = np.array([f"user{u}" for u in range(n_users)])
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        idx = np.arange(start, start + k)
        users = users_all[rng.integers(0, n_users, k)]
        scope = np.char.add(np.char.add("u=", users), "|a=|r=")
        verb = rng.integers(0, len(VERBS), k)
        obj = rng.integers(0, len(objects), k)
        texts = [f"{u.capitalize()} {VERBS[v]} {objects[o]} (note {i})" for u, v, o, i in zip(users, verb, obj, idx)]
        ids = np.array([f"mem-{i:09d}" for i in idx])
        runs = np.array([f"run-{i // 2:09d}" for i in idx])
        created = [now - dt.timedelta(minutes=int(i)) for i in idx]
        vec = rng.standard_normal((k, dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        words = [re.findall(r"\w+", t.lower()) for t in texts]
        db.insert_arrow("memories", vectors_table(
            vec, dim, id=ids, memory=texts, hash=[hashlib.md5(t.lower().encode()).hexdigest() for t in texts],
            user_id=users, scope_key=scope, role=["user"] * k, attributed_to=[u.capitalize() for u in users],
            doc_len=pa.array([len(w) for w in words], pa.int32()),
            created_at=pa.array(created, pa.timestamp("us")), updated_at=pa.array(created, pa.timestamp("us")),
            valid_from=pa.array(created, pa.timestamp("us")), extraction_run_id=runs))
        term_mem = np.repeat(np.arange(k), [len(w) for w in words])
        db.insert_arrow("keyword_postings", pa.table({
            "memory_id": ids[term_mem], "scope_key": scope[term_mem], "user_id": users[term_mem],
            "term": [t for w in words for t in w], "tf": pa.array(np.ones(len(term_mem), np.int32))}))
        ent_mem = np.array([j for j, o in enumerate(obj)])
        db.insert_arrow("entity_postings", pa.table({
            "entity_id": [entity_id(objects[o].lower()) for o in obj], "memory_id": ids[ent_mem],
            "scope_key": scope, "user_id": users}))
        linked = np.arange(0, k - 1, 10)  # one "related" link per ten memories (same chunk, same user rarely matters)
        db.insert_arrow("memory_links", pa.table({
            "src_id": ids[linked + 1], "dst_id": ids[linked], "kind": ["related"] * len(linked),
            "scope_key": scope[linked + 1], "user_id": users[linked + 1],
            "created_at": pa.array([now] * len(linked), pa.timestamp("us"))}))
        db.insert_arrow("history", pa.table({
            "id": np.char.add("h-", ids), "memory_id": ids, "event": ["ADD"] * k,
            "old_memory": pa.array([None] * k, pa.string()), "new_memory": texts, "user_id": users,
            "scope_key": scope, "role": ["user"] * k, "created_at": pa.array(created, pa.timestamp("us"))}))
        first = np.arange(0, k, 2)
        db.insert_arrow("extraction_runs", pa.table({
            "id": runs[first], "scope_key": scope[first], "user_id": users[first], "extractor": ["llm"] * len(first),
            "model": ["scripted-model"] * len(first), "status": ["ok"] * len(first),
            "n_facts": pa.array([2] * len(first), pa.int32()), "n_added": pa.array([2] * len(first), pa.int32()),
            "created_at": pa.array([created[j] for j in first], pa.timestamp("us"))}))
    msg_users = np.repeat(users_all, 10)
    n_msg = len(msg_users)
    db.insert_arrow("messages", pa.table({
        "id": [f"msg-{i:08d}" for i in range(n_msg)], "scope_key": np.char.add(np.char.add("u=", msg_users), "|a=|r="),
        "user_id": msg_users, "role": ["user"] * n_msg, "content": [f"old message {i}" for i in range(n_msg)],
        "created_at": pa.array([now - dt.timedelta(seconds=i) for i in range(n_msg)], pa.timestamp("us"))}))
    db.con.execute("CHECKPOINT")


def answer(body: dict) -> str:
    """The scripted model: turns the new message's statements into facts (like a real extractor)."""
    prompt = body["messages"][-1]["content"]
    new = prompt.rsplit("New messages:\n", 1)[-1]
    who, _, text = new.partition(": ")
    facts = [f"{who} {s.strip()}" for s in re.split(r"[.;] | and ", text.replace("I ", "", 1)) if s.strip()]
    return json.dumps({"facts": [{"text": f, "attributed_to": who} for f in facts[:3]]})


def message(rng: np.random.Generator, n: int) -> str:
    c, t, co, nm = (rng.integers(0, len(x)) for x in (CITIES, THINGS, COMPANIES, NAMES))
    return (f"I moved to {CITIES[c]} in week {n} and started working at {COMPANIES[co]}. "
            f"My friend {NAMES[nm]} got me into {THINGS[t]} lately")


def run_size(n: int, adds: int, n_users: int, embedder: str, profile: bool = False) -> dict:
    rng = np.random.default_rng(n)
    with tempfile.TemporaryDirectory(prefix="memstore-bench-") as tmp, \
            ScriptedOpenAIServer(chat_responder=answer, latency_s=0.0) as srv:
        cfg = {"llm": {"provider": "openai", "base_url": srv.base_url, "api_key": "bench", "model": "scripted-model",
                       "max_retries": 0, "timeout": 10}}
        if embedder != "local":
            cfg["embedder"] = {"provider": embedder}
        m = Memory(str(Path(tmp) / "bench.duckdb"), config=cfg)
        t0 = time.perf_counter()
        prefill(m.db, n, n_users)
        fill_s = time.perf_counter() - t0
        stored = m.db.scalar("SELECT count(*) FROM memories")
        for i in range(5):  # warm-up: spaCy, ONNX session, DuckDB caches
            m.add(message(rng, -i), user_id=f"user{rng.integers(0, n_users)}")
        step_cpu = track_step_cpu(m)
        statements = profile_statements(m) if profile else None
        rows, cpu_rows, added = [], [], 0
        for i in range(adds):
            step_cpu.clear()
            out = m.add(message(rng, i), user_id=f"user{rng.integers(0, n_users)}")
            step_cpu.finish()
            added += sum(r["event"] == "ADD" for r in out["results"])
            rows.append(out["timings"])
            cpu_rows.append(dict(step_cpu))
        m.close()
    top = sorted(((k, float(np.median(v)) * 1000, len(v)) for k, v in (statements or {}).items()),
                 key=lambda r: -r[1] * r[2])[:15]
    return {"n": n, "stored": stored, "fill_s": fill_s, "adds": adds, "facts_added": added,
            "timings": rows, "cpu": cpu_rows, "statements": top, "rss_mb": current_rss_mb(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def current_rss_mb() -> float:
    """Resident set size now (Linux /proc; NaN elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration, ValueError):
        return float("nan")


class _StepCPU(dict):
    """Process CPU seconds per pipeline step, from the step:* checkpoints (robust when the machine is
    shared: wall time counts waiting for a core, CPU time does not)."""

    current: str | None = None
    started: float = 0.0

    def enter(self, step: str) -> None:
        now = time.process_time()
        self.finish(now)
        self.current, self.started = step, now

    def finish(self, now: float | None = None) -> None:
        now = time.process_time() if now is None else now
        if self.current:
            self[self.current] = self.get(self.current, 0.0) + now - self.started
        self.current = None

    def clear(self) -> None:
        super().clear()
        self.current = None


def track_step_cpu(m: Memory) -> _StepCPU:
    acc, checkpoint = _StepCPU(), m.db.checkpoint

    def hook(point: str) -> None:
        if point.startswith("step:"):
            acc.enter(point[5:])
        checkpoint(point)
    m.db.checkpoint = hook  # type: ignore[method-assign]
    return acc


def profile_statements(m: Memory) -> dict[str, list[float]]:
    """CPU time of every statement on this thread's cursor, by its first meaningful SQL line."""
    stats: dict[str, list[float]] = {}
    cur = m.db.con

    class Timed:
        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(cur, name)

        def execute(self, sql: str, *args):  # noqa: ANN002, ANN202
            t = time.process_time()
            try:
                return cur.execute(sql, *args)
            finally:
                key = next((ln.strip() for ln in sql.splitlines() if ln.strip() and not ln.startswith("--")), sql)
                stats.setdefault(key[:70], []).append(time.process_time() - t)
    m.db._local.cur = Timed()
    return stats


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q)) if values else float("nan")


def summarise(res: dict) -> dict[str, tuple[float, float]]:
    rows = res["timings"]
    cols = {k: [r.get(k, 0.0) for r in rows] for k in TIMING_KEYS}
    cols["store-side"] = [sum(r.get(k, 0.0) for k in STORE_SIDE) for r in rows]
    cols["other"] = [r["total"] - sum(r.get(k, 0.0) for k in TIMING_KEYS if k != "total") for r in rows]
    out = {k: (pct(v, 50), pct(v, 95)) for k, v in cols.items()}
    cpu = [sum(r.get(k, 0.0) for k in WRITE_STEPS_CPU) for r in res["cpu"]]
    out["store-side cpu"] = (pct(cpu, 50), pct(cpu, 95))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    ap.add_argument("--adds", type=int, default=100)
    ap.add_argument("--users", type=int, default=1_000)
    ap.add_argument("--embedder", default="local", choices=["local", "hashing"])
    ap.add_argument("--profile", action="store_true", help="also list the costliest SQL statements (CPU)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(run_size(args.child, args.adds, args.users, args.embedder, args.profile)))
        return

    results = []
    for n in args.sizes:
        users = min(args.users, max(1, n // 10))
        print(f"store with {n:,} memories over {users:,} users: filling and running {args.adds} adds ...",
              file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, __file__, "--child", str(n), "--adds", str(args.adds),
                               "--users", str(users), "--embedder", args.embedder]
                              + (["--profile"] if args.profile else []),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"benchmark at {n} failed:\n{proc.stderr}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        res["users"] = users
        results.append(res)

    rows = ["context", "llm", "embed", "nlp", "dedupe", "supersede", "build", "store", "store-side",
            "store-side cpu", "other", "total"]
    sums = [summarise(r) for r in results]
    head = f"{'add() ms':<15}" + "".join(f"{format(r['stored'], ',') + ' stored':>22}" for r in results)
    print(head)
    print(f"{'':<15}" + "".join(f"{'p50':>11}{'p95':>11}" for _ in results))
    for k in rows:
        label = f"{k} *" if k == "store-side" else k
        print(f"{label:<15}" + "".join(f"{s[k][0]:>11.2f}{s[k][1]:>11.2f}" for s in sums))
    print(f"{'peak RSS MB':<15}" + "".join(f"{r['peak_rss_mb']:>22.0f}" for r in results))
    print(f"{'RSS at end MB':<15}" + "".join(f"{r['rss_mb']:>22.0f}" for r in results))
    print(f"{'prefill s':<15}" + "".join(f"{r['fill_s']:>22.1f}" for r in results))
    print(f"{'users':<15}" + "".join(f"{r['users']:>22,}" for r in results))
    print(f"{'facts added':<15}" + "".join(f"{r['facts_added']:>22,}" for r in results))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n* store-side = {' + '.join(STORE_SIDE)} (wall, under the write lock); target p50 < 5 ms at 100k.\n"
          f"  store-side cpu = process CPU time of the same steps (less sensitive to a busy machine).\n"
          f"  other = total minus the listed parts. {results[0]['adds']} adds per size after 5 warm-up adds; "
          f"embedder: {args.embedder}; {os.cpu_count()} CPUs, load average {load}.")
    for r in results:
        if r["statements"]:
            print(f"\ncostliest statements at {r['stored']:,} stored (CPU ms p50 x calls):")
            for sql, ms, calls in r["statements"]:
                print(f"  {ms:7.2f} x {calls:<4} {sql}")


if __name__ == "__main__":
    main()
