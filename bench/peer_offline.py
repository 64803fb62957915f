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
PEER = ROOT.parent / "shared" / "peer-bench" / "bench"
DATA = ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo_dev5.json"
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="a copy of a peer-bench memstore.duckdb")
    ap.add_argument("--features", choices=("openai", "local"), default="openai")
    ap.add_argument("--embed-url", default="http://127.0.0.1:8797/v1")
    ap.add_argument("--qcache", default=None)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--dump", default=None, help="every question's whole candidate table (+ relevant) to Parquet")
    ap.add_argument("--json", default=None, help="per-question hits to this JSON file")
    ap.add_argument("--config", default=None, help="JSON of search config overrides")
    args = ap.parse_args()
    sys.path.insert(0, str(PEER))
    import locomo  # the peer bench's own data access: same evidence and fact index

    from memstore import Memory
    from memstore.retrieval.search import candidate_table

    emb = {"provider": "local"} if args.features == "local" else \
        {"provider": "openai", "base_url": args.embed_url, "api_key": "x", "model": "all-MiniLM-L6-v2", "dims": 384}
    cfg = {"path": args.store, "embedder": emb}
    if args.config:
        cfg["search"] = json.loads(args.config)
    m = Memory.from_config(cfg)
    cached = CachedEmbedder(m._rt.embedder, Path(args.qcache) if args.qcache else None)
    m._rt.embedder = cached
    hits: dict = defaultdict(list)           # (group, k) -> [0/1]
    per_q, dumped = [], []
    for s in locomo.load(args.data):
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
            for k in KS:
                h = float(any(flags[:k]))
                rec[f"hit@{k}"] = h
                for g in ("all", f"cat{q['category']}", sid, half):
                    hits[(g, k)].append(h)
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
    groups = ["all", "tune", "check", "cat1", "cat2", "cat3", "cat4", *TUNE, *CHECK]
    print(f"| {args.features} | " + " | ".join(groups) + " |")
    for k in KS:
        print(f"| @{k} | " + " | ".join(f"{np.mean(hits[(g, k)]):.3f}" for g in groups) + " |")
    print(f"n={len(hits[('all', 10)])}")
    if args.dump and dumped:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.concat_tables(dumped), args.dump)
    if args.json:
        Path(args.json).write_text(json.dumps(per_q))


if __name__ == "__main__":
    main()
