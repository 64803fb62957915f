"""The README demo: build the default store (data/memstore.duckdb — the one the library, the CLI and
the dashboard open by default) from the bundled demo chat exports, offline, and print what was
remembered about alice and a few searches.

    make demo            (or: python scripts/demo.py [--store PATH] [--fresh])

Run again, it only completes what is missing (ingest skips messages it already holds); `--fresh`
deletes the store first. Then `make app` shows the same store in the dashboard.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore import Memory
from memstore.core.config import DEFAULT_PATH
from memstore.dashboard.demo_store import DEMO_USERS, ensure_demo_store


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=os.environ.get("MEMSTORE_PATH") or DEFAULT_PATH,
                    help=f"store to build or complete (default: $MEMSTORE_PATH, else {DEFAULT_PATH})")
    ap.add_argument("--fresh", action="store_true", help="delete the store first")
    args = ap.parse_args(argv)
    if args.fresh:
        for suffix in ("", ".wal"):
            if os.path.exists(args.store + suffix):
                os.remove(args.store + suffix)
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(f"store: {Path(args.store).resolve()}\n")
    ensure_demo_store(args.store, progress=lambda f, msg: print(f"[{f:4.0%}] {msg}", flush=True))
    with Memory(args.store) as m:
        n = {u: m.frame("memories", user_id=u).height for u in DEMO_USERS}
        print("\nmemories per demo user: " + ", ".join(f"{u} {k:,}" for u, k in n.items()) + "\n")
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
    print(f"\ndone in {time.perf_counter() - t0:.1f} s — explore it: memstore list --user alice"
          + ("" if args.store == DEFAULT_PATH else f" --store {args.store}") + ", or `make app` for the dashboard")


if __name__ == "__main__":
    main()
