"""`memstore reads`: the audit of reads, newest first (what each read returned, to whom)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from memstore.cli import add_scope_args, add_store_arg, open_memory


def cmd_reads(args: argparse.Namespace) -> int:
    from memstore.audit.reads_frame import parse_since, recent_reads

    parse_since(args.since)         # a bad --since says so before the store opens
    with open_memory(args, read_only=True) as m:
        df = recent_reads(m, user_id=args.user_id, agent_id=args.agent_id, run_id=args.run_id, token=args.token,
                          since=args.since, limit=args.limit)
    if args.format == "json":
        sys.stdout.write(df.write_ndjson())
    elif args.format == "csv":
        sys.stdout.write(df.with_columns(*[df[c].cast(str) if df[c].dtype.is_nested() else df[c]
                                           for c in df.columns]).write_csv())
    else:
        _print_table(df)
    if df.is_empty():
        print("(no reads) — reads are recorded when the store is opened with config "
              "{\"audit\": {\"reads\": \"on\"}} (memstore serve --config ...)", file=sys.stderr)
    return 0


def _print_table(df: Any) -> None:
    for r in df.iter_rows(named=True):
        who = r["token_name"] or "-"
        scope = " ".join(f"{k}={r[k]}" for k in ("user_id", "agent_id", "run_id") if r[k])
        query = f" {r['query']!r}" if r["query"] is not None else ""
        print(f"{r['ts']:%Y-%m-%d %H:%M:%S}  {who:<16} {r['door']:<9} {r['method']:<14} {scope}{query}  "
              f"-> {r['n_results']} result(s), {r['ms']:.1f} ms")
        scores = r["scores"] or []
        for i, mid in enumerate((r["result_ids"] or [])[:10]):
            score = f"  {scores[i]:.3f}" if i < len(scores) and scores[i] is not None else ""
            print(f"      {mid}{score}")


def register(sub: Any) -> None:
    p = sub.add_parser("reads", help="the audit of reads: what each read returned, to whom, newest first")
    add_scope_args(p)
    p.add_argument("--token", default=None, help="only the reads of this token name (admin: the server's admin token)")
    p.add_argument("--since", default=None, help="only reads since then: 30m, 12h, 7d, 2w or a date")
    p.add_argument("--limit", type=int, default=100, help="at most this many reads (default 100)")
    p.add_argument("--format", default="table", choices=("table", "json", "csv"), help="output format")
    add_store_arg(p), p.set_defaults(func=cmd_reads)
