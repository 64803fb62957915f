"""Build (or complete) the dashboard's demo store: the four demo chat exports of data/demo ingested
offline, plus the small `sam` scope (a contradiction, an expired and an expiring memory, LLM runs
ok/malformed) — see memstore/dashboard/demo_store.py.

    python scripts/build_demo_store.py                 # data/memstore.duckdb (the default store: `make app` opens it)
    python scripts/build_demo_store.py --store /tmp/d.duckdb --fresh
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memstore.dashboard.demo_store import DEFAULT_DEMO_STORE, ensure_demo_store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=str(DEFAULT_DEMO_STORE), help="store to build or complete")
    ap.add_argument("--fresh", action="store_true", help="delete the store first")
    args = ap.parse_args()
    if args.fresh:
        for suffix in ("", ".wal"):
            if os.path.exists(args.store + suffix):
                os.remove(args.store + suffix)
    t0 = time.perf_counter()
    ensure_demo_store(args.store, progress=lambda f, msg: print(f"[{f:4.0%}] {msg}", flush=True))
    print(f"{args.store} ready in {time.perf_counter() - t0:.1f} s — open it with: streamlit run app.py")


if __name__ == "__main__":
    main()
