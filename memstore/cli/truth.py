"""Truth subcommands: contradictions, resolve, timeline, purge-expired."""
from __future__ import annotations

import argparse
import json
import sys

from memstore.cli import add_period_args, add_scope_args, add_store_arg, open_memory, scope_from_args


def _who(scope: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in scope.items()) or "(no scope)"


def _need_scope(scope: dict, command: str) -> bool:
    if scope:
        return True
    print(f"error: `memstore {command}` needs a scope — add --user NAME (or --agent / --run)", file=sys.stderr)
    return False


def _when(value: object) -> str:
    return "" if value is None else str(value)[:16]


def cmd_contradictions(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not _need_scope(scope, "contradictions"):
        return 2
    with open_memory(args) as m:
        frame = m.contradictions(**scope)
    if args.json:
        print(json.dumps(frame.to_dicts(), indent=2, ensure_ascii=False, default=str))
        return 0
    if frame.is_empty():
        print(f"no contradictions among the current memories of {_who(scope)}", file=sys.stderr)
        return 0
    for r in frame.iter_rows(named=True):
        print(f"{r['reason']}\n  older {r['older_id']}  {_when(r['older_valid_from'])}  {r['older_memory']}\n"
              f"  newer {r['newer_id']}  {_when(r['newer_valid_from'])}  {r['newer_memory']}")
    print(f"\n{frame.height} candidate(s); keep one with `memstore resolve KEEP_ID --supersede OTHER_ID`",
          file=sys.stderr)
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.resolve(args.keep, supersede=args.supersede or None, dismiss=args.dismiss or None,
                        actor_id=args.actor)
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else out["message"])
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not _need_scope(scope, "timeline"):
        return 2
    from memstore.analysis.periods import as_of, in_period

    with open_memory(args) as m:
        frame = m.timeline(**scope)
    if args.as_of:
        frame = as_of(frame, args.as_of)
    frame = in_period(frame, "valid_from", args.since, args.until)
    if args.slot:
        frame = frame.filter(frame["slot"] == args.slot)
    if args.csv:
        sys.stdout.write(frame.write_csv())
        return 0
    if args.json:
        print(json.dumps(frame.to_dicts(), indent=2, ensure_ascii=False, default=str))
        return 0
    if frame.is_empty():
        print(f"{_who(scope)} has no memories yet — add some with `memstore add \"...\" --user NAME`",
              file=sys.stderr)
        return 0
    for r in frame.iter_rows(named=True):
        span = f"{_when(r['valid_from']):16} → {_when(r['valid_to']) or 'now':16}"
        slot = f"  [{r['slot']}]" if r["slot"] else ""
        print(f"{span}  {r['status']:<10} {r['memory']}{slot}")
    return 0


def cmd_purge_expired(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    with open_memory(args) as m:
        out = m.purge_expired(**scope, dry_run=args.dry_run, actor_id=args.actor)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for mid in out["ids"]:
            print(mid)
        print(out["message"] + ("" if scope else " (all scopes)"), file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("contradictions", help="candidate conflicts among a scope's current memories")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_contradictions)

    p = sub.add_parser("resolve", help="keep one memory, supersede (or mark compatible) others")
    p.add_argument("keep", help="id of the memory that stays current")
    p.add_argument("--supersede", nargs="+", metavar="ID", help="ids that the kept memory replaces")
    p.add_argument("--dismiss", nargs="+", metavar="ID", help="ids that do not conflict with it after all")
    p.add_argument("--actor", help="who decided (recorded in history)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_store_arg(p), p.set_defaults(func=cmd_resolve)

    p = sub.add_parser("timeline", help="every memory of a scope with its validity interval and status")
    p.add_argument("--slot", help="only this slot, e.g. lives_in")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--csv", action="store_true", help="print CSV (for plotting)")
    add_period_args(p, as_of=True, what="facts that became true (valid_from, conversation time)")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("purge-expired", help="physically delete expired memories (all scopes unless given)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be purged")
    p.add_argument("--actor", help="who purged (recorded in history)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_purge_expired)
