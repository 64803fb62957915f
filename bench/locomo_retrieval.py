"""LoCoMo retrieval benchmark: recall of evidence turns for semantic-only, keyword-only,
entity-only and fused search, in raw mode (every turn a memory) and fact mode (the dataset's
observation facts, served as an oracle extractor through the OpenAI-compatible test server).

    python bench/locomo_retrieval.py                # both modes, all five conversations
    python bench/locomo_retrieval.py --mode fact --convs 2
    python bench/locomo_retrieval.py --mode fact --store /tmp/s --dump /tmp/cands.parquet

--dump writes every question's whole candidate table (every signal, the channels, and whether the
memory is evidence) to one Parquet file: re-fuse it offline (Polars) to try a weighting in seconds,
as notebooks/04_search_tuning.ipynb does, instead of searching the store again.

Data: ../shared/bench-data/locomo/locomo_dev5.json (CC BY-NC 4.0, evaluation only, not shipped).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq

from memstore import Memory
from memstore.retrieval.search import candidate_table
from memstore.testing.openai_server import ScriptedOpenAIServer

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-data" / "locomo" / "locomo_dev5.json"
MODES = {"semantic": ("semantic",), "keyword": ("keyword",), "entity": ("entity",),
         "fused": ("semantic", "keyword", "entity")}
KS = (5, 10, 20)
_DIA = re.compile(r"^D\d+:\d+$")


def sessions(conv: dict) -> list[tuple[int, str, list[dict]]]:
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            out.append((n, conv.get(f"session_{n}_date_time"), turns))
    return sorted(out)


def load_raw(m: Memory, sample: dict) -> dict[str, set[str]]:
    """Every turn as a memory (infer=False), dia_id in metadata. Returns memory id -> dia ids."""
    ids: dict[str, set[str]] = {}
    uid = sample["sample_id"]
    for _n, when, turns in sessions(sample["conversation"]):
        for t in turns:
            text = t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
            out = m.add([{"role": "user", "content": text, "name": t["speaker"]}], user_id=uid, infer=False,
                        metadata={"dia_id": t["dia_id"]}, timestamp=when)
            for r in out["results"]:
                ids[r["id"]] = {t["dia_id"]}
    return ids


def load_facts(m: Memory, srv: ScriptedOpenAIServer, sample: dict) -> dict[str, set[str]]:
    """The observation facts of each session, returned by the scripted LLM for that session's add()."""
    uid = sample["sample_id"]
    obs = sample["observation"]
    by_text: dict[str, set[str]] = defaultdict(set)
    ids: dict[str, set[str]] = {}
    for n, when, turns in sessions(sample["conversation"]):
        facts = []
        for speaker, items in (obs.get(f"session_{n}_observation") or {}).items():
            for text, dia in items:
                dias = dia if isinstance(dia, list) else [dia]
                by_text[text.strip()].update(d for d in dias if isinstance(d, str))
                facts.append({"text": text, "attributed_to": speaker})
        srv.push_chat(json.dumps({"facts": facts}))
        msgs = [{"role": "user", "content": t["text"], "name": t["speaker"]} for t in turns]
        out = m.add(msgs, user_id=uid, timestamp=when)
        for r in out["results"]:
            ids[r["id"]] = by_text.get(r["memory"].strip(), set())
    # facts deduplicated into an earlier memory: give that memory the evidence of both
    for rec in m.get_all(filters={"user_id": uid}, top_k=100000)["results"]:
        ids.setdefault(rec["id"], set()).update(by_text.get(rec["memory"].strip(), set()))
    return ids


def dump_candidates(m: Memory, sample: dict, qa: dict, evidence: set[str], ids: dict[str, set[str]]) -> pa.Table:
    """The question's whole candidate table with the question, its category and the evidence flag."""
    t = candidate_table(m._rt, qa["question"], filters={"user_id": sample["sample_id"]}, limit=100_000)
    n = t.num_rows
    relevant = [bool(ids.get(i, set()) & evidence) for i in t.column("id").to_pylist()]
    return t.append_column("relevant", pa.array(relevant, pa.bool_())) \
        .append_column("conv", pa.array([sample["sample_id"]] * n)) \
        .append_column("question", pa.array([qa["question"]] * n)) \
        .append_column("category", pa.array([int(qa["category"])] * n, pa.int64()))


def evaluate(m: Memory, sample: dict, ids: dict[str, set[str]], table: dict, lat: list[float],
             dumped: list | None = None) -> None:
    uid = sample["sample_id"]
    valid = {t["dia_id"] for _n, _w, turns in sessions(sample["conversation"]) for t in turns}
    for qa in sample["qa"]:
        cat = qa.get("category")
        if cat not in (1, 2, 3, 4):
            continue
        evidence = {e for e in qa.get("evidence", []) if isinstance(e, str) and _DIA.match(e) and e in valid}
        if not evidence:
            continue
        if dumped is not None:
            dumped.append(dump_candidates(m, sample, qa, evidence, ids))
        for mode, channels in MODES.items():
            t0 = time.perf_counter()
            res = m.search(qa["question"], filters={"user_id": uid}, top_k=max(KS), channels=channels,
                           explain=mode == "fused")
            if mode == "fused":
                lat.append((time.perf_counter() - t0, res["timings"]))
            ranked = [ids.get(r["id"], set()) for r in res["results"]]
            for k in KS:
                got = set().union(*ranked[:k]) if ranked[:k] else set()
                hit = got & evidence
                table[(mode, cat, k)].append((len(hit) / len(evidence), 1.0 if hit else 0.0))


def report(name: str, table: dict, lat: list) -> dict:
    print(f"\n## {name} mode")
    out = {}
    cats = sorted({c for (_m, c, _k) in table})
    header = "| channel | " + " | ".join(f"cat {c} any@10" for c in cats) + " | " + \
        " | ".join(f"recall@{k}" for k in KS) + " | " + " | ".join(f"any-hit@{k}" for k in KS) + " |"
    print(header)
    print("|" + "---|" * (1 + len(cats) + 2 * len(KS)))
    for mode in MODES:
        row = [mode]
        for c in cats:
            v = table[(mode, c, 10)]
            row.append(f"{statistics.mean(x[1] for x in v):.3f} (n={len(v)})")
        allk = {k: [x for c in cats for x in table[(mode, c, k)]] for k in KS}
        row += [f"{statistics.mean(x[0] for x in allk[k]):.3f}" for k in KS]
        row += [f"{statistics.mean(x[1] for x in allk[k]):.3f}" for k in KS]
        out[mode] = {f"recall@{k}": statistics.mean(x[0] for x in allk[k]) for k in KS}
        out[mode].update({f"any_hit@{k}": statistics.mean(x[1] for x in allk[k]) for k in KS})
        out[mode]["per_category_any_hit@10"] = {c: statistics.mean(x[1] for x in table[(mode, c, 10)]) for c in cats}
        out[mode]["per_category_recall@10"] = {c: statistics.mean(x[0] for x in table[(mode, c, 10)]) for c in cats}
        print("| " + " | ".join(row) + " |")
    total = sorted(x[0] * 1000 for x in lat)
    sql = sorted(x[1]["sql"] * 1000 for x in lat)
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]  # noqa: E731
    print(f"\nfused search latency over {len(total)} questions: total p50 {q(total, .5):.1f} ms, "
          f"p95 {q(total, .95):.1f} ms; SQL only p50 {q(sql, .5):.1f} ms, p95 {q(sql, .95):.1f} ms")
    out["latency_ms"] = {"total_p50": q(total, .5), "total_p95": q(total, .95), "sql_p50": q(sql, .5),
                         "sql_p95": q(sql, .95)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--mode", choices=("raw", "fact", "both"), default="both")
    ap.add_argument("--convs", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--embedder", default="local", choices=("local", "hashing"), help="embedder provider")
    ap.add_argument("--store", default=None,
                    help="keep the built store in this directory and reuse it on the next run (one per mode)")
    ap.add_argument("--dump", default=None, help="write every question's candidate table to this Parquet file")
    ap.add_argument("--channels", nargs="+", default=list(MODES), choices=list(MODES),
                    help="which channel settings to evaluate (default all)")
    args = ap.parse_args()
    for name in list(MODES):
        if name not in args.channels:
            del MODES[name]
    data = json.loads(Path(args.data).read_text())
    if args.convs:
        data = data[: args.convs]
    results = {}
    for mode in (("raw", "fact") if args.mode == "both" else (args.mode,)):
        with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as srv:
            cfg = {"messages_kept": 0, "embedder": {"provider": args.embedder}}
            if mode == "fact":
                cfg["llm"] = {"provider": "openai", "base_url": srv.base_url, "api_key": "x", "max_retries": 0}
            where = Path(args.store) if args.store else Path(tmp)
            where.mkdir(parents=True, exist_ok=True)
            path = where / f"locomo_{mode}_{args.embedder}_{len(data)}.duckdb"
            saved = path.with_suffix(".ids.json")
            reuse = args.store is not None and path.exists() and saved.exists()
            m = Memory(str(path), config=cfg)
            t0 = time.perf_counter()
            ids: dict[str, set[str]] = {}
            if reuse:
                ids = {k: set(v) for k, v in json.loads(saved.read_text()).items()}
            else:
                for sample in data:
                    ids.update(load_raw(m, sample) if mode == "raw" else load_facts(m, srv, sample))
                saved.write_text(json.dumps({k: sorted(v) for k, v in ids.items()}))
            print(f"[{mode}] {'reused' if reuse else 'stored'} {len(ids)} memories in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
            table: dict = defaultdict(list)
            lat: list = []
            dumped: list | None = [] if args.dump else None
            for sample in data:
                evaluate(m, sample, ids, table, lat, dumped)
            if dumped:
                out = Path(args.dump)
                out = out.with_name(f"{out.stem}_{mode}{out.suffix}") if args.mode == "both" else out
                pq.write_table(pa.concat_tables(dumped), out)
                print(f"[{mode}] candidate tables of {len(dumped)} questions -> {out}", file=sys.stderr)
            results[mode] = report(mode, table, lat)
            m.close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
