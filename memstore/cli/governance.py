"""Governance subcommands: forget, receipts, scrub, doctor, retention (set / clear / show / apply)."""
from __future__ import annotations

import argparse
import json
import sys

from memstore.cli import add_scope_args, add_store_arg, open_memory, scope_from_args


def _who(scope: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in scope.items()) or "everyone (global)"


def _dump(obj: object) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def cmd_forget(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not scope:
        print("error: `memstore forget` needs a scope — add --user NAME (or --agent / --run)", file=sys.stderr)
        return 2
    if not args.yes:
        print(f"refusing without --yes: this erases every trace of {_who(scope)} (memories, history, messages, "
              "exports) and cannot be undone", file=sys.stderr)
        return 2
    with open_memory(args) as m:
        r = m.forget(**scope, actor_id=args.actor, scrub=not args.no_scrub)
    if args.json:
        _dump(r)
    else:
        removed = ", ".join(f"{t} {n}" for t, n in r["rows_removed"].items() if n) or "nothing (no rows)"
        v = r["verification"]
        print(f"erased {_who(scope)}: {removed}")
        if r["files_rewritten"]:
            print(f"export files: {len(r['files_rewritten'])} rewritten/removed")
        print(f"bytes: {r['method']}; verification {'PASSED' if r['verified'] else 'FAILED'} "
              f"({v['needles_checked']} strings checked in {v['files_scanned']} file(s), "
              f"{sum(v['hits'].values())} hit(s))")
        print(f"receipt {r['id']} (scope stored as keyed hash {r['scope_hash'][:16]}…)")
    if not r["verified"]:
        print("warning: verification failed — see `memstore receipts --json`; run `memstore scrub` and check "
              "`memstore doctor`", file=sys.stderr)
        return 1
    return 0


def cmd_receipts(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        rows = m.erasure_receipts(**scope_from_args(args))
    if args.json:
        _dump(rows)
        return 0
    if not rows:
        print("no erasure receipts" + (f" for {_who(scope_from_args(args))}" if scope_from_args(args) else ""), file=sys.stderr)
        return 0
    for r in rows:
        total = sum(r["rows_removed"].values())
        print(f"{r['completed_at']}  {r['id']}  {'verified' if r['verified'] else 'NOT VERIFIED'}  "
              f"{total} rows, {len(r['files_rewritten'])} files  "
              f"scope {','.join(r['scope_keys'])}#{r['scope_hash'][:12]}")
    return 0


def cmd_scrub(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.scrub()
    print(f"rewrote {out['method']}: {out.get('bytes_before', 0):,} → {out.get('bytes_after', 0):,} bytes "
          f"in {out.get('seconds', 0):.1f}s")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        frame = m.doctor(repair=args.repair)
    if args.json:
        _dump(frame.to_dicts())
    elif frame.is_empty():
        print("healthy: every invariant holds")
    else:
        import polars as pl

        for r in frame.iter_rows(named=True):
            fixed = "  [repaired]" if r["repaired"] else ""
            print(f"{r['severity']:<8} {r['check']:<24} {r['table']:<17} {r['row_id'] or '-'}  {r['detail']}{fixed}")
        summary = frame.group_by("check", "severity").agg(pl.len().alias("n"), pl.col("repaired").sum().alias("fixed"))
        for r in summary.sort("check").iter_rows(named=True):
            print(f"{r['severity']:<8} {r['check']:<26} {r['n']:>6} found, {r['fixed']} repaired", file=sys.stderr)
        if not args.repair and frame["repairable"].any():
            print("run `memstore doctor --repair` to fix the repairable ones", file=sys.stderr)
    left = frame.filter((frame["severity"] == "error") & ~frame["repaired"]) if frame.height else frame
    return 1 if left.height else 0


def _days(value: str) -> int | None:
    if value.lower() in ("none", "forever", "keep"):
        return None
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days (or 'forever')") from None
    if n < 0:
        raise argparse.ArgumentTypeError("days must be >= 0")
    return n


def cmd_retention_set(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        p = m.set_retention(args.target, args.days, **scope_from_args(args))
    keep = "forever" if p["retain_days"] is None else f"{p['retain_days']} day(s)"
    print(f"{args.target}: keep {keep} for {_who(scope_from_args(args))}; apply with `memstore retention apply`")
    return 0


def cmd_retention_clear(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        found = m.clear_retention(args.target, **scope_from_args(args))
    print(("removed" if found else "there was no") + f" {args.target} policy for {_who(scope_from_args(args))}")
    return 0


def cmd_retention_show(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        frame = m.retention_policies()
    if args.json:
        _dump(frame.to_dicts())
    elif frame.is_empty():
        print("no retention policies: everything is kept — set one with "
              "`memstore retention set messages 30`", file=sys.stderr)
    else:
        for r in frame.iter_rows(named=True):
            who = _who({k: r[k] for k in ("user_id", "agent_id", "run_id") if r[k] is not None})
            keep = "forever" if r["retain_days"] is None else f"{r['retain_days']} day(s)"
            print(f"{r['target']:<13} {keep:<12} {who}")
    return 0


def cmd_retention_apply(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.apply_retention(dry_run=args.dry_run, now=args.now)
    verb = "would remove" if args.dry_run else "removed"
    print(f"{verb} {out['messages']} message(s) and the text of {out['history_text']} history event(s)"
          + (f", and {out['reads']} read(s) of the audit" if out.get("reads") else ""))
    if not args.dry_run and any(out.values()):
        print("their old bytes stay in the file until `memstore scrub`", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("forget", help="erase a user/agent/run everywhere, verifiably, with a receipt")
    p.add_argument("--yes", action="store_true", help="confirm (required)")
    p.add_argument("--actor", default=None, help="who asked (stored in the receipt)")
    p.add_argument("--no-scrub", action="store_true", help="skip rewriting the database file (faster; not verified)")
    p.add_argument("--json", action="store_true", help="print the receipt as JSON")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_forget)

    p = sub.add_parser("receipts", help="list erasure receipts (of one scope with --user/--agent/--run)")
    p.add_argument("--json", action="store_true")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_receipts)

    p = sub.add_parser("scrub", help="rewrite the database file so deleted rows leave no bytes")
    add_store_arg(p), p.set_defaults(func=cmd_scrub)

    p = sub.add_parser("doctor", help="check the store's invariants (exit 1 on errors)")
    p.add_argument("--repair", action="store_true", help="fix what is safe to fix")
    p.add_argument("--json", action="store_true")
    add_store_arg(p), p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("retention", help="how long messages and history text are kept")
    rsub = p.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    q = rsub.add_parser("set", help="keep TARGET for DAYS days (globally, or for --user/--agent/--run)")
    q.add_argument("target", choices=("messages", "history_text", "reads"))
    q.add_argument("days", type=_days, help="whole days, or 'forever'")
    add_scope_args(q), add_store_arg(q), q.set_defaults(func=cmd_retention_set)
    q = rsub.add_parser("clear", help="remove a retention policy")
    q.add_argument("target", choices=("messages", "history_text", "reads"))
    add_scope_args(q), add_store_arg(q), q.set_defaults(func=cmd_retention_clear)
    q = rsub.add_parser("show", help="list retention policies")
    q.add_argument("--json", action="store_true")
    add_store_arg(q), q.set_defaults(func=cmd_retention_show)
    q = rsub.add_parser("apply", help="delete old messages and blank old history text now")
    q.add_argument("--dry-run", action="store_true", help="only count")
    q.add_argument("--now", default=None, help=argparse.SUPPRESS)
    add_store_arg(q), q.set_defaults(func=cmd_retention_apply)
