"""Reads and writes while the store's file is rewritten under them (issue 44): one served store,
N client threads doing search / add / delete through HTTP while another thread runs `forget` and
`scrub` (each rewrites the file and reopens the connection) in a loop
(memstore/testing/erasure_load.py). Prints the answers by route and status and whether every
acknowledged add is still there.

    python bench/erasure_under_load.py                    # 8 clients, 60 s
    python bench/erasure_under_load.py --clients 8 --seconds 20

Every answer must be a success or a typed retryable error (409 StoreBusyError / 503 with
`Retry-After`); a 500, or a 4xx that blames the request, is a bug. Exit status 1 if one was seen
or an acknowledged memory was lost.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.testing.erasure_load import run_load


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--preload", type=int, default=3000, help="memories of other scopes stored before serving")
    ap.add_argument("--fronts", type=int, default=0, help="serve with --fronts N")
    args = ap.parse_args()
    store = os.path.join(tempfile.mkdtemp(prefix="memstore-erasure-load-"), "load.duckdb")
    report = run_load(store, clients=args.clients, seconds=args.seconds, preload_memories=args.preload,
                      server_args=["--fronts", str(args.fronts)] if args.fronts else None)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min) after {report.seconds:.0f} s, {args.clients} clients + "
          "1 forget/scrub loop")
    print(report.table())
    print(f"acknowledged adds kept: {report.expected - len(report.lost)}/{report.expected}; lost: {len(report.lost)}")
    for line in report.bad[:20]:
        print("NOT TYPED/RETRYABLE:", line)
    return 1 if report.bad or report.lost else 0


if __name__ == "__main__":
    sys.exit(main())
