"""Re-score BEAM stores built by ../shared/peer-bench/beam/beam_bench.py (configs raw, raw_openai)
with this checkout's search, offline: any-hit@5/10/20 overall and per BEAM category, for the default
search next to plain cosine on the same store (the floor fusion must not go below) and any variants.

Query vectors are cached (--qcache), so a raw_openai store needs the peer bench's fake server only
once. A copy of the store is opened (the original stays as the bench left it).

    python bench/beam_offline.py --store WORK/raw_openai/raw_openai.duckdb --convs 1-6 \
        --embed-url http://127.0.0.1:8831/v1 --qcache /tmp/q.npz [--variant 'name={"w_keyword":0}'] [--json out.json]

Groups: every conversation given, and per category. --convs picks the conversations (BEAM: tune on
1-20, check on 21-35).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = next((d / "shared" for d in (ROOT.parent, ROOT.parent.parent) if (d / "shared" / "peer-bench").is_dir()),
              ROOT.parent / "shared")
sys.path.insert(0, str(SHARED / "peer-bench" / "beam"))
sys.path.insert(0, str(ROOT / "bench"))
KS = (5, 10, 20)
# plain cosine on the same store: one channel, no smoothing, neighbours, feedback or fusion features
PLAIN = ({"conversation_smoothing": 0.0, "neighbour_window": 0, "feedback_k": 0, "w_episode": 0.0, "w_time": 0.0,
          "w_person": 0.0, "w_slot": 0.0}, ("semantic",))


def score(m, qs, size: str, channels=None) -> tuple[list[dict], float]:
    """Per question {qid, category, conv, first} (first: rank of the first evidence hit, None) and CPU s."""
    import beam_data

    out = []
    c0 = time.process_time()
    for q in qs:
        kw = {"channels": channels} if channels else {}
        r = m.search(q.question, filters={"user_id": beam_data.user_id(size, q.conv)}, top_k=max(KS), **kw)["results"]
        ids = [int((x.get("metadata") or {}).get("beam_id", -1)) for x in r]
        first = next((i + 1 for i, b in enumerate(ids) if b in q.evidence), None)
        out.append({"qid": q.qid, "category": q.category, "conv": q.conv, "first": first})
    return out, time.process_time() - c0


def table(runs: dict[str, list[dict]]) -> None:
    def at(rows, k):
        return sum(r["first"] is not None and r["first"] <= k for r in rows) / max(len(rows), 1)

    any_rows = next(iter(runs.values()))
    print(f"\n{len(any_rows)} questions\n\n| variant | @5 | @10 | @20 |\n|---|---|---|---|")
    for name, rows in runs.items():
        print(f"| {name} | " + " | ".join(f"{at(rows, k):.3f}" for k in KS) + " |")
    cats = sorted({r["category"] for r in any_rows})
    print("\n| category | n | " + " | ".join(runs) + " |\n|---|---|" + "---|" * len(runs))
    for c in cats:
        cells = []
        for rows in runs.values():
            sub = [r for r in rows if r["category"] == c]
            cells.append(" / ".join(f"{at(sub, k):.2f}" for k in KS))
        print(f"| {c} | {sum(r['category'] == c for r in any_rows)} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True)
    ap.add_argument("--size", default="500K")
    ap.add_argument("--convs", required=True)
    ap.add_argument("--features", choices=("openai", "local"), default="openai")
    ap.add_argument("--embed-url", default="http://127.0.0.1:8831/v1")
    ap.add_argument("--qcache", default=None)
    ap.add_argument("--variant", action="append", default=[], help='name=JSON of search config overrides')
    ap.add_argument("--no-plain", action="store_true", help="skip the plain-cosine row")
    ap.add_argument("--json", default=None, help="per question and variant: rank of the first hit")
    args = ap.parse_args()
    import beam_data
    from peer_offline import CachedEmbedder

    from memstore import Memory

    convs = beam_data.select(args.size, args.convs)
    qs = [q for n in convs for q in beam_data.load_questions(args.size, n)]
    emb = {"provider": "local"} if args.features == "local" else \
        {"provider": "openai", "base_url": args.embed_url, "api_key": "x", "model": "all-MiniLM-L6-v2", "dims": 384}
    tmp = tempfile.mkdtemp(prefix="beam_offline_")
    store = os.path.join(tmp, "store.duckdb")
    shutil.copy(args.store, store)
    if os.path.exists(args.store + ".wal"):
        shutil.copy(args.store + ".wal", store + ".wal")
    variants = [("default", {}, None)]
    if not args.no_plain:
        variants.append(("plain cosine", *PLAIN))
    for v in args.variant:
        name, _, cfg = v.partition("=")
        variants.append((name, json.loads(cfg), None))
    runs, cpu = {}, {}
    qcache = Path(args.qcache) if args.qcache else None
    try:
        for name, cfg, channels in variants:
            m = Memory.from_config({"path": store, "embedder": emb, "search": cfg})
            cached = CachedEmbedder(m._rt.embedder, qcache)
            m._rt.embedder = cached
            runs[name], cpu[name] = score(m, qs, args.size, channels)
            cached.save()
            m.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"BEAM {args.size} conversations {args.convs}: " + ", ".join(f"{k} {v:.1f} s CPU" for k, v in cpu.items()))
    table(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(runs))


if __name__ == "__main__":
    main()
