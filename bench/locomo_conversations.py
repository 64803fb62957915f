"""LoCoMo in conversation mode: the raw dialogues (no oracle facts) ingested with the offline
extractor, against every turn stored as said (`add(infer=False)`), scored in one run.

    python bench/locomo_conversations.py                    # TUNE and CHECK, local embedder
    python bench/locomo_conversations.py --split tune       # only the conversations rules are tuned on
    python bench/locomo_conversations.py --raw-store /tmp/raw   # keep the raw-turn store between runs

Each sample is ingested through `Memory.ingest` (LoCoMo format: a session is a conversation, a turn a
message whose id is its `dia_id`) into the scope `user_id=<sample_id>`; a memory's evidence turns are
the `source_message_id`s of the messages it cites. The raw store holds each turn (with its image
caption) as one memory, its `dia_id` in metadata. Every question of categories 1-4 with a valid
evidence id is searched (default fused search, 20 results) in its conversation's scope; any-hit@k
counts a question when one of the first k results comes from an evidence turn.

Split (fixed, by conversation): TUNE = conv-26, conv-30, conv-41 (rules may be fitted to these);
CHECK = conv-42, conv-43 (never looked at while writing rules; report them separately).

Data: ../shared/bench-data/locomo/locomo_dev5.json (CC BY-NC 4.0, evaluation only, not shipped).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore import Memory  # noqa: E402

# ../shared from the main checkout, ../../shared from a worktree under wt/
DEFAULT_DATA = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared")
                     if (p / "bench-data").exists()), ROOT.parent / "shared") / "bench-data" / "locomo" / "locomo_dev5.json"
SPLITS = {"tune": ("conv-26", "conv-30", "conv-41"), "check": ("conv-42", "conv-43")}
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"^D\d+:\d+$")


def sessions(conv: dict) -> list[tuple[int, str | None, list[dict]]]:
    """(number, date_time, turns) of each session, in order."""
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            n = int(m.group(1))
            out.append((n, conv.get(f"session_{n}_date_time"), turns))
    return sorted(out)


def load_offline(m: Memory, sample: dict, tmp: Path) -> tuple[dict[str, set[str]], dict]:
    """Ingest the sample's dialogue with the offline extractor; memory id -> evidence (dia) ids."""
    uid = sample["sample_id"]
    path = tmp / f"{uid}.json"
    path.write_text(json.dumps([{"sample_id": uid, "conversation": sample["conversation"]}]))
    report = m.ingest(str(path), user_id=uid, format="locomo", progress=False)
    msgs = m.frame("messages", user_id=uid).select("id", "source_message_id")
    dia = dict(zip(msgs["id"].to_list(), msgs["source_message_id"].to_list()))
    mems = m.frame("memories", user_id=uid).select("id", "source_message_ids")
    ids = {mid: {dia[s] for s in (src or []) if s in dia}
           for mid, src in zip(mems["id"].to_list(), mems["source_message_ids"].to_list())}
    return ids, report.to_dict()


def load_raw(m: Memory, sample: dict) -> dict[str, set[str]]:
    """Every turn as one memory (infer=False); a text said twice is one memory citing both turns."""
    ids: dict[str, set[str]] = defaultdict(set)
    uid = sample["sample_id"]
    for _n, when, turns in sessions(sample["conversation"]):
        for t in turns:
            text = t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
            out = m.add([{"role": "user", "content": text, "name": t["speaker"]}], user_id=uid, infer=False,
                        metadata={"dia_id": t["dia_id"]}, timestamp=when)
            for r in out["results"]:
                ids[r["id"]].add(t["dia_id"])
    return dict(ids)


def evaluate(m: Memory, sample: dict, ids: dict[str, set[str]], table: dict, log: list | None = None) -> None:
    """Append (category, {k: hit}) of each scorable question to table[sample_id] (and, with `log`,
    the question, its evidence and the first ten results)."""
    uid = sample["sample_id"]
    valid = {t["dia_id"] for _n, _w, turns in sessions(sample["conversation"]) for t in turns}
    for qa in sample["qa"]:
        cat = qa.get("category")
        if cat not in CATEGORIES:
            continue
        evidence = {e for e in qa.get("evidence", []) if isinstance(e, str) and _DIA.match(e) and e in valid}
        if not evidence:
            continue
        res = m.search(qa["question"], filters={"user_id": uid}, top_k=max(KS))
        ranked = [ids.get(r["id"], set()) for r in res["results"]]
        hits = {k: any(r & evidence for r in ranked[:k]) for k in KS}
        table[uid].append((cat, hits))
        if log is not None:
            log.append({"conv": uid, "question": qa["question"], "category": cat, "evidence": sorted(evidence),
                        "hits": hits, "top10": [(r["memory"], sorted(ids.get(r["id"], ()))) for r in res["results"][:10]]})


def summarise(rows: list[tuple[int, dict[int, bool]]]) -> dict:
    out: dict = {"n": len(rows)}
    for k in KS:
        out[f"any_hit@{k}"] = statistics.mean(h[k] for _c, h in rows) if rows else float("nan")
    for c in CATEGORIES:
        sub = [h for cat, h in rows if cat == c]
        out[f"cat{c}"] = {"n": len(sub), **{f"any_hit@{k}": statistics.mean(h[k] for h in sub) if sub else None
                                            for k in KS}}
    return out


def print_split(name: str, convs: tuple[str, ...], figures: dict[str, dict], memories: dict[str, int],
                messages: int) -> None:
    print(f"\n## {name}: {', '.join(convs)} ({messages} messages)")
    print("| store | memories | n | any-hit@5 | any-hit@10 | any-hit@20 | "
          + " | ".join(f"cat {c} {CATEGORIES[c]} @10" for c in CATEGORIES) + " |")
    print("|---" * (6 + len(CATEGORIES)) + "|")
    for store, f in figures.items():
        cats = [f"{f[f'cat{c}']['any_hit@10']:.3f} (n={f[f'cat{c}']['n']})" if f[f"cat{c}"]["n"] else "-"
                for c in CATEGORIES]
        print(f"| {store} | {memories[store]} | {f['n']} | " + " | ".join(f"{f[f'any_hit@{k}']:.3f}" for k in KS)
              + " | " + " | ".join(cats) + " |")
    raw, off = figures["raw"], figures["offline"]
    diff = " ".join(f"@{k} {100 * (off[f'any_hit@{k}'] - raw[f'any_hit@{k}']):+.1f}" for k in KS)
    cats = " ".join(f"cat{c} {100 * (off[f'cat{c}']['any_hit@10'] - raw[f'cat{c}']['any_hit@10']):+.1f}"
                    for c in CATEGORIES if raw[f"cat{c}"]["n"])
    print(f"offline - raw (points): {diff}; per category @10: {cats}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--split", choices=("tune", "check", "both"), default="both")
    ap.add_argument("--embedder", default="local", choices=("local", "hashing"))
    ap.add_argument("--raw-store", default=None, help="keep the raw-turn store in this directory and reuse it")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--dump", default=None, help="write the offline memories (text, evidence) and each question's "
                    "offline results and hits next to the raw store's hits to this JSONL file")
    args = ap.parse_args()
    wanted = SPLITS[args.split] if args.split != "both" else SPLITS["tune"] + SPLITS["check"]
    data = [s for s in json.loads(Path(args.data).read_text()) if s["sample_id"] in wanted]
    cfg = {"messages_kept": 0, "embedder": {"provider": args.embedder}}
    tables: dict[str, dict] = {"raw": defaultdict(list), "offline": defaultdict(list)}
    counts: dict[str, dict[str, int]] = {"raw": {}, "offline": {}}
    n_messages: dict[str, int] = {}
    cpu_total = [0.0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        raw_dir = Path(args.raw_store) if args.raw_store else tmp
        raw_dir.mkdir(parents=True, exist_ok=True)
        dump = open(args.dump, "w") if args.dump else None
        with Memory(str(tmp / "offline.duckdb"), config=cfg) as off, \
                Memory(str(raw_dir / f"raw_{args.embedder}.duckdb"), config=cfg) as raw:
            for sample in data:
                uid = sample["sample_id"]
                n_messages[uid] = sum(len(t) for _n, _w, t in sessions(sample["conversation"]))
                t0 = time.perf_counter()
                ids_off, rep = load_offline(off, sample, tmp)
                t_off = time.perf_counter() - t0
                saved = raw_dir / f"raw_{args.embedder}_{uid}.ids.json"
                if args.raw_store and saved.exists():
                    ids_raw = {k: set(v) for k, v in json.loads(saved.read_text()).items()}
                else:
                    ids_raw = load_raw(raw, sample)
                    saved.write_text(json.dumps({k: sorted(v) for k, v in ids_raw.items()}))
                counts["offline"][uid], counts["raw"][uid] = len(ids_off), len(ids_raw)
                cpu = rep["stages_cpu_s"].get("total", 0.0)
                cpu_total[0] += cpu
                print(f"[{uid}] {n_messages[uid]} messages -> {len(ids_off)} offline memories "
                      f"(ingest {t_off:.1f} s wall, {cpu:.1f} s CPU, {rep['memories']}), {len(ids_raw)} raw",
                      file=sys.stderr)
                if dump:
                    texts = off.frame("memories", user_id=uid).select("id", "memory", "attributed_to")
                    for mid, text, who in zip(*(texts[c].to_list() for c in ("id", "memory", "attributed_to"))):
                        dump.write(json.dumps({"conv": uid, "memory": text, "who": who,
                                               "evidence": sorted(ids_off.get(mid, ()))}) + "\n")
                logs: dict[str, list] = {"offline": [], "raw": []}
                evaluate(off, sample, ids_off, tables["offline"], logs["offline"])
                evaluate(raw, sample, ids_raw, tables["raw"], logs["raw"])
                if dump:
                    for o, r in zip(logs["offline"], logs["raw"]):
                        dump.write(json.dumps({"question": o, "raw_hits": r["hits"]}) + "\n")
        if dump:
            dump.close()
    msgs = sum(n_messages.values())
    print(f"\noffline ingest: {msgs} messages, {cpu_total[0]:.1f} s CPU = {msgs / max(cpu_total[0], 1e-9):.0f} messages "
          f"per CPU second (load average {os.getloadavg()[0]:.1f})")
    results: dict = {"ingest_cpu_s": cpu_total[0], "messages": msgs}
    splits = {k: v for k, v in SPLITS.items() if args.split in (k, "both")}
    if args.split == "both":
        splits["all"] = SPLITS["tune"] + SPLITS["check"]
    for name, convs in splits.items():
        figures = {store: summarise([row for c in convs for row in tables[store].get(c, [])])
                   for store in ("raw", "offline")}
        mems = {store: sum(counts[store].get(c, 0) for c in convs) for store in ("raw", "offline")}
        print_split(name.upper(), convs, figures, mems, sum(n_messages.get(c, 0) for c in convs))
        results[name] = {"conversations": list(convs), "memories": mems, **figures}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
