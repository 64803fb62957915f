"""Replay the peer bench's searches (../shared/peer-bench, fact mode) offline on stores it built.

The peer bench adds each LoCoMo session without timestamps (every fact's valid_from is its add()
time, sessions seconds apart), with "Speaker: text" messages and the oracle facts attributed to
the speaker; it scores a returned memory as a hit when its text is an oracle fact citing one of the
question's evidence turns. This script reopens a copy of such a store (runs/<tag>/work_memstore_*)
with this checkout's code and scores search() the same way: any-hit@5/10/20 overall, per category,
per conversation and for the tune (conv-26/30/41) and check (conv-42/43) halves. Query vectors are
cached (--qcache), so the "openai" store needs the peer bench's fake server only once.

    python bench/peer_offline.py --store /tmp/peer/openai/memstore.duckdb --features openai \
        --embed-url http://127.0.0.1:8797/v1 --qcache /tmp/peer/q_openai.npz [--dump cands.parquet]

--mem0 runs/<tag>/mem0_plain_dev.json: mem0's own hits (same questions, same facts, same vectors)
next to memstore's, per group, with the paired counts: +N questions only memstore finds in its top
10, -N only mem0 finds. --losses FILE: for each of those -N, the best-ranked right fact, its rank,
the rank plain cosine gives it, and which signal pushed it down: per signal, the mean over the
results ranked above it of weight x (their value - its value) / sum of weights (the semantic signal
split into the raw cosine and the conversation smoothing); a summary by signal is printed.
--versus RUN.json: another run's --json (e.g. the session store's, to compare the public-API path
with it): paired counts per group against it, and the questions either one alone finds in its top 10.
--half tune|check: only that half's conversations (fit on tune without printing a check figure).
--build-api DIR: the public-API path instead of a peer-bench store: every oracle fact of every
session added alone, `add(fact, infer=False)`, no timestamps, then scored the same way (the
embedder must be the peer bench's fake server for --features openai).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# ../shared beside the checkout (/work/main), or two levels up for a worktree (/work/wt/<name>)
SHARED = next((d / "shared" for d in (ROOT.parent, ROOT.parent.parent) if (d / "shared" / "peer-bench").is_dir()),
              ROOT.parent / "shared")
PEER = SHARED / "peer-bench" / "bench"
DATA = SHARED / "bench-data" / "locomo" / "locomo_dev5.json"
KS = (5, 10, 20)
TUNE, CHECK = ("conv-26", "conv-30", "conv-41"), ("conv-42", "conv-43")


class CachedEmbedder:
    """Query vectors from a cache file, the real embedder for the rest (then saved)."""

    def __init__(self, inner, path: Path | None):
        self.inner, self.path, self.cache, self.dirty = inner, path, {}, False
        if path is not None and path.exists():
            z = np.load(path, allow_pickle=True)
            self.cache = dict(zip(z["texts"].tolist(), z["vecs"]))

    def embed(self, texts):
        missing = [t for t in texts if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing)):
                self.cache[t] = np.asarray(v, np.float32)
            self.dirty = True
        return [self.cache[t] for t in texts]

    def save(self):
        if self.dirty and self.path is not None:
            texts = list(self.cache)
            np.savez(self.path, texts=np.array(texts, object), vecs=np.stack([self.cache[t] for t in texts]))

    def __getattr__(self, name):
        return getattr(self.inner, name)


SIGNALS = ("cosine", "smoothing", "keyword", "entity", "recency", "slot", "person", "episode", "time")


def build_api(path: Path, cfg: dict, samples: list, locomo) -> None:
    """The public-API store: each oracle fact added alone with add(fact, infer=False), no dates."""
    from memstore import Memory

    if path.exists():
        return
    path.mkdir(parents=True)
    m = Memory.from_config(dict(cfg, path=str(path / "memstore.duckdb")))
    for s in samples:
        for skey in locomo.session_keys(s):
            for _speaker, text, _ids in locomo.session_facts(s, skey):
                m.add(text, user_id=s["sample_id"], infer=False)
    m.close()


def mem0_hits(path: str) -> dict[tuple[str, int], dict[int, float]]:
    """(sample, qi) -> {k: hit} from a run_bench.py results file."""
    out = {}
    for r in json.loads(Path(path).read_text())["searches"]:
        if r["scorable"]:
            out[(r["sample"], r["qi"])] = {k: float(r[f"hit@{k}"]) for k in KS}
    return out


def loss_row(rt, question: str, sid: str, fidx: dict, ev: set) -> dict:
    """Why fusion put the right fact below the top 10: its rank, its plain-cosine rank, and per
    signal the mean weighted margin of the results above it (see the module docstring)."""
    from memstore.retrieval.search import _weights, candidate_table

    sc = rt.config.search
    t = candidate_table(rt, question, filters={"user_id": sid}, limit=100_000).to_pylist()
    lam, ck = sc.conversation_smoothing, sc.candidate_k
    sc.conversation_smoothing, sc.candidate_k = 0.0, 100_000      # plain cosine, every memory a candidate
    try:
        raw = {r["id"]: r["semantic"] for r in candidate_table(rt, question, filters={"user_id": sid},
                                                               limit=100_000).to_pylist()}
    finally:
        sc.conversation_smoothing, sc.candidate_k = lam, ck
    ids = [r["id"] for r in t]
    texts = dict(rt.db.rows("t", {"ids": ids}, sql="SELECT id, memory FROM memories WHERE list_contains($ids, id)"))
    rel = [i for i, r in enumerate(t) if fidx.get(texts.get(r["id"], ""), set()) & ev]
    w = {k: v for k, v in _weights(sc, None, ("semantic", "keyword", "entity"), question).items()
         if not k.startswith("_")}
    total = sum(w.values())
    out = {"sample": sid, "question": question, "rank": (rel[0] + 1) if rel else None}
    by_cos = sorted(raw, key=lambda i: -raw[i])
    out["cosine_rank"] = min((by_cos.index(t[i]["id"]) + 1 for i in rel), default=None)
    if not rel:
        return out
    r, above = t[rel[0]], t[:10]
    margin = {}
    for s in SIGNALS:
        if s == "cosine":
            vals = [raw.get(a["id"], 0.0) - raw.get(r["id"], 0.0) for a in above]
            wt = w["semantic"]
        elif s == "smoothing":
            vals = [(a["semantic"] - raw.get(a["id"], 0.0)) - (r["semantic"] - raw.get(r["id"], 0.0)) for a in above]
            wt = w["semantic"]
        else:
            vals = [a[s] - r[s] for a in above]
            wt = w.get(s, 0.0)
        margin[s] = wt * float(np.mean(vals)) / total
    out["margin"] = margin
    out["pusher"] = max((s for s in SIGNALS if s != "cosine"), key=lambda s: margin[s])
    out["right"] = texts.get(r["id"])
    out["top"] = [texts.get(a["id"]) for a in above[:3]]
    return out


def versus(mine: list[dict], theirs: list[dict], questions: dict) -> None:
    """Paired any-hit@10 against another run of the same questions (+ only this run finds, - only
    the other), per half and category, then the questions that differ."""
    other = {(r["sample"], r["qi"]): r["hit@10"] for r in theirs}
    pm: dict = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])
    diff = []
    for r in mine:
        key = (r["sample"], r["qi"])
        if key not in other:
            continue
        half = "tune" if r["sample"] in TUNE else "check"
        for g in ("all", half, f"{half}/cat{r['category']}"):
            pm[g][0] += r["hit@10"] > other[key]
            pm[g][1] += r["hit@10"] < other[key]
            pm[g][2] += r["hit@10"]
            pm[g][3] += other[key]
            pm[g][4] += 1
        if r["hit@10"] != other[key]:
            diff.append((half, "+" if r["hit@10"] > other[key] else "-", *key, r["category"]))
    print("\nany-hit@10, this run vs --versus (paired: +only this run / -only the other)")
    print("| group | n | this | other | + | - |")
    print("|---|---|---|---|---|---|")
    for g in ("all", "tune", "check", *(f"{h}/cat{c}" for h in ("tune", "check") for c in (1, 2, 3, 4))):
        w, l, a, b, n = pm[g]
        if n:
            print(f"| {g} | {n} | {a / n:.3f} | {b / n:.3f} | +{w} | -{l} |")
    for half, sign, sid, qi, cat in sorted(diff):
        print(f"{half} {sign} {sid} q{qi} cat{cat}: {questions.get((sid, qi), '')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=None, help="a copy of a peer-bench memstore.duckdb")
    ap.add_argument("--build-api", default=None, help="build (once) and score the public-API store in this dir")
    ap.add_argument("--features", choices=("openai", "local"), default="openai")
    ap.add_argument("--embed-url", default="http://127.0.0.1:8797/v1")
    ap.add_argument("--qcache", default=None)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--dump", default=None, help="every question's whole candidate table (+ relevant) to Parquet")
    ap.add_argument("--json", default=None, help="per-question hits to this JSON file")
    ap.add_argument("--config", default=None, help="JSON of search config overrides")
    ap.add_argument("--mem0", default=None, help="run_bench.py results of mem0 (runs/<tag>/mem0_plain_dev.json)")
    ap.add_argument("--losses", default=None, help="JSON lines: the questions only mem0 finds, and why")
    ap.add_argument("--versus", default=None, help="another run's --json: paired counts against it")
    ap.add_argument("--half", choices=("all", "tune", "check"), default="all",
                    help="score only this half's conversations (tune: fit without seeing the check half)")
    args = ap.parse_args()
    if bool(args.store) == bool(args.build_api):
        ap.error("give one of --store and --build-api")
    if args.losses and not args.mem0:
        ap.error("--losses needs --mem0")
    sys.path.insert(0, str(PEER))
    import locomo  # the peer bench's own data access: same evidence and fact index

    from memstore import Memory
    from memstore.retrieval.search import candidate_table

    emb = {"provider": "local"} if args.features == "local" else \
        {"provider": "openai", "base_url": args.embed_url, "api_key": "x", "model": "all-MiniLM-L6-v2", "dims": 384}
    samples = locomo.load(args.data)
    if args.half != "all":
        samples = [s for s in samples if s["sample_id"] in (TUNE if args.half == "tune" else CHECK)]
    store = args.store
    if args.build_api:
        build_api(Path(args.build_api), {"embedder": emb}, samples, locomo)
        store = str(Path(args.build_api) / "memstore.duckdb")
    cfg = {"path": store, "embedder": emb}
    if args.config:
        cfg["search"] = json.loads(args.config)
    m = Memory.from_config(cfg)
    cached = CachedEmbedder(m._rt.embedder, Path(args.qcache) if args.qcache else None)
    m._rt.embedder = cached
    theirs = mem0_hits(args.mem0) if args.mem0 else {}
    hits: dict = defaultdict(list)           # (group, k) -> [0/1]
    other: dict = defaultdict(list)          # (group, k) -> mem0's [0/1]
    pm: dict = defaultdict(lambda: [0, 0])   # group -> [only memstore, only mem0] at 10
    per_q, dumped, losses = [], [], []
    for s in samples:
        sid = s["sample_id"]
        fidx = locomo.fact_index(s)
        for q in locomo.qa_items(s, (1, 2, 3, 4)):
            ev = set(q["evidence"])
            if not ev:
                continue
            res = m.search(q["question"], filters={"user_id": sid}, top_k=max(KS))
            flags = [bool(fidx.get(r["memory"], set()) & ev) for r in res["results"]]
            half = "tune" if sid in TUNE else "check"
            rec = {"sample": sid, "qi": q["qi"], "category": q["category"]}
            groups = ("all", f"cat{q['category']}", sid, half, f"{half}/cat{q['category']}")
            mine = theirs.get((sid, q["qi"]))
            for k in KS:
                h = float(any(flags[:k]))
                rec[f"hit@{k}"] = h
                for g in groups:
                    hits[(g, k)].append(h)
                    if mine is not None:
                        other[(g, k)].append(mine[k])
            if mine is not None:
                for g in groups:
                    pm[g][0] += rec["hit@10"] > mine[10]
                    pm[g][1] += rec["hit@10"] < mine[10]
                if args.losses and rec["hit@10"] < mine[10]:
                    losses.append(dict(loss_row(m._rt, q["question"], sid, fidx, ev), qi=q["qi"],
                                       category=q["category"], half=half))
            per_q.append(rec)
            if args.dump:
                import pyarrow as pa
                t = candidate_table(m._rt, q["question"], filters={"user_id": sid}, limit=100_000)
                texts = dict(m._rt.db.rows("t", {"ids": t.column("id").to_pylist()},
                                           sql="SELECT id, memory FROM memories WHERE list_contains($ids, id)"))
                rel = [bool(fidx.get(texts.get(i, ""), set()) & ev) for i in t.column("id").to_pylist()]
                n = t.num_rows
                dumped.append(t.append_column("relevant", pa.array(rel))
                              .append_column("conv", pa.array([sid] * n))
                              .append_column("qi", pa.array([q["qi"]] * n, pa.int64()))
                              .append_column("question", pa.array([q["question"]] * n))
                              .append_column("category", pa.array([q["category"]] * n, pa.int64())))
    cached.save()
    m.close()
    groups = [g for g in ("all", "tune", "check", "cat1", "cat2", "cat3", "cat4", *TUNE, *CHECK) if hits[(g, 10)]]
    print(f"| {args.features} | " + " | ".join(groups) + " |")
    for k in KS:
        print(f"| @{k} | " + " | ".join(f"{np.mean(hits[(g, k)]):.3f}" for g in groups) + " |")
    print(f"n={len(hits[('all', 10)])}")
    if theirs:
        print("\nany-hit@10, memstore vs mem0 (paired: +only memstore / -only mem0)")
        print("| group | n | memstore | mem0 | diff | + | - |")
        print("|---|---|---|---|---|---|---|")
        for g in ("all", "tune", "check", *(f"{h}/cat{c}" for h in ("tune", "check") for c in (1, 2, 3, 4))):
            if not hits[(g, 10)]:
                continue
            a, b = np.mean(hits[(g, 10)]), np.mean(other[(g, 10)])
            print(f"| {g} | {len(hits[(g, 10)])} | {a:.3f} | {b:.3f} | {100 * (a - b):+.1f} | +{pm[g][0]} | -{pm[g][1]} |")
    if args.losses:
        Path(args.losses).write_text("".join(json.dumps(r) + "\n" for r in losses))
        print(f"\nlosses ({len(losses)}) by the signal that pushed the right fact down most:")
        for half in ("tune", "check"):
            rows = [r for r in losses if r["half"] == half and "margin" in r]
            if not any(r["half"] == half for r in losses):
                continue
            count = defaultdict(int)
            for r in rows:
                count[(r["category"], r["pusher"])] += 1
            mean = {s: np.mean([r["margin"][s] for r in rows]) if rows else 0.0 for s in SIGNALS}
            print(f"{half}: n={len(rows)}; mean margin " + " ".join(f"{s}={v:+.4f}" for s, v in mean.items()))
            for (cat, sig), c in sorted(count.items()):
                print(f"  cat{cat} {sig}: {c}")
    if args.versus:
        versus(per_q, json.loads(Path(args.versus).read_text()), {(s["sample_id"], q["qi"]): q["question"]
                                                                 for s in samples for q in locomo.qa_items(s, (1, 2, 3, 4))})
    if args.dump and dumped:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.concat_tables(dumped), args.dump)
    if args.json:
        Path(args.json).write_text(json.dumps(per_q))


if __name__ == "__main__":
    main()
