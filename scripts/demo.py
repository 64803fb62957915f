"""The README demo: ingest the bundled demo chat exports offline, print what was remembered and a search.

    make demo            (or: python scripts/demo.py [--store PATH])
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore import Memory  # noqa: E402

DEMO = ROOT / "data" / "demo"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store", default=str(ROOT / "data" / "quickstart.duckdb"), help="store to (re)create")
    args = ap.parse_args()
    for suffix in ("", ".wal"):
        if os.path.exists(args.store + suffix):
            os.remove(args.store + suffix)
    t0 = time.perf_counter()
    with Memory(args.store) as m:
        print(f"store: {args.store}\n")
        report = m.ingest(DEMO / "chatgpt" / "alice" / "conversations.json", user_id="alice", progress=False)
        print(report.summary(), "\n")
        current = m.get_all(user_id="alice", top_k=15)["results"]
        print(f"What memstore remembers about alice (newest {len(current)} current facts):")
        for r in current:
            print(f"  - {r['memory']}   (valid from {str(r['valid_from'])[:10]})")
        for q in ("where does alice live?", "what does alice eat?", "where does alice work?"):
            print(f"\nsearch: {q!r}")
            for r in m.search(q, user_id="alice", top_k=3, explain=True)["results"]:
                ch = "+".join(r["explain"]["channels"])
                print(f"  {r['score']:.3f}  {r['memory']}   [{ch}]")
        every = m.get_all(user_id="alice", top_k=1000, include_superseded=True)["results"]
        old = [r for r in every if r["status"] == "superseded"][:5]
        if old:
            print("\nNo longer true (kept for audit, not returned by default):")
            for r in old:
                print(f"  - {r['memory']}   (until {str(r['invalidated_at'])[:10]})")
    print(f"\ndone in {time.perf_counter() - t0:.1f} s — explore it: memstore list --user alice --store {args.store}")


if __name__ == "__main__":
    main()
