"""Store-side CPU of `add(infer=False)` for a 1,000-character message (issue 43: target <= 10 ms).

    python bench/raw_add_cpu.py                 # 300 adds of ~1,000 characters, after 100 to warm up
    python bench/raw_add_cpu.py --adds 500 --chars 1000 --rounds 3

What is measured: the process CPU time (`time.process_time`: every thread of the process, DuckDB's
included) of each `Memory.add([msg], user_id=..., infer=False, metadata=...)` on a real DuckDB file,
minus the embedder's own CPU for the same text (measured alone, then subtracted: the embedder is
the model's cost, not the store's; the `hashing` embedder is used so that part is small and steady).
What remains is validation, the raw turn's terms and entities (providers/light_analysis.py),
de-duplication, row building and the write transaction. Messages are paragraphs of this repository's
README.md cut to --chars characters (each one unique), so the vocabulary is real English and grows
as a chat's would; the first --warm adds are left out (the lemma memo and DuckDB's caches fill).

A/B, interleaved in one process (rounds alternate, so load affects both alike): `light` is the
default; `spacy` forces the full spaCy analysis (tok2vec, tagger, NER) on the raw turn, what
add(infer=False) ran before. Print `uptime` next to the figures: the machine is shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore import Memory  # noqa: E402
from memstore.pipeline import analyze_facts as analysis_step  # noqa: E402


def messages(chars: int, n: int) -> list[str]:
    """n unique messages of about `chars` characters from README.md's prose."""
    text = " ".join(line.strip() for line in (ROOT / "README.md").read_text().splitlines()
                    if line.strip() and not line.startswith(("|", "```", "    ")))
    words = text.split()
    out, i = [], 0
    while len(out) < n:
        msg: list[str] = [f"Note {len(out)}:"]
        while sum(len(w) + 1 for w in msg) < chars:
            msg.append(words[i % len(words)])
            i += 1
        out.append(" ".join(msg)[:chars])
    return out


def run(mode: str, m: Memory, texts: list[str], uid: str) -> list[float]:
    """Process CPU seconds of each add, in `mode` (light: the default; spacy: the full analysis)."""
    forced = analysis_step._analyze
    if mode == "spacy":
        analysis_step._analyze = lambda nlp, t, raw: nlp.analyze(t)     # type: ignore[assignment]
    try:
        out = []
        for i, t in enumerate(texts):
            c = time.process_time()
            m.add([{"role": "user", "content": t}], user_id=uid, infer=False, metadata={"n": i})
            out.append(time.process_time() - c)
        return out
    finally:
        analysis_step._analyze = forced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adds", type=int, default=300)
    ap.add_argument("--warm", type=int, default=100)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="DuckDB threads (config key threads)")
    a = ap.parse_args()
    texts = messages(a.chars, a.warm + 2 * a.rounds * a.adds)
    with tempfile.TemporaryDirectory() as d:
        m = Memory.from_config({"path": os.path.join(d, "raw.duckdb"), "embedder": {"provider": "hashing"},
                                "threads": a.threads})
        emb = m._rt.embedder
        run("light", m, texts[:a.warm], "warm")
        cpu: dict[str, list[float]] = {"light": [], "spacy": []}
        pos = a.warm
        for r in range(a.rounds):
            for mode in ("light", "spacy") if r % 2 == 0 else ("spacy", "light"):
                batch = texts[pos:pos + a.adds]
                pos += a.adds
                cpu[mode] += run(mode, m, batch, f"u-{mode}")
        c = time.process_time()
        for t in texts[:a.adds]:
            emb.embed([f"User: {t}"])
        embed_ms = (time.process_time() - c) / a.adds * 1000
        m.close()
    load = os.getloadavg()
    print(f"add(infer=False), {a.chars}-character messages, {a.rounds} interleaved rounds of {a.adds} adds per mode "
          f"(after {a.warm} to warm up); load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
          f"{os.cpu_count()} CPUs")
    print(f"embedder (hashing) alone: {embed_ms:.2f} ms CPU per message (subtracted below)")
    print("| mode | store-side CPU ms p50 | mean | p90 |")
    print("|---|---|---|---|")
    for mode, xs in cpu.items():
        ms = sorted(x * 1000 - embed_ms for x in xs)
        print(f"| {mode} | {statistics.median(ms):.2f} | {statistics.fmean(ms):.2f} | {ms[int(0.9 * len(ms))]:.2f} |")
    ratio = statistics.median(cpu["spacy"]) / max(statistics.median(cpu["light"]), 1e-9)
    print(f"spacy / light (p50 of process CPU, embedder included): {ratio:.1f}x")


if __name__ == "__main__":
    main()
