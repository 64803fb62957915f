"""Core subcommands: add, search, list, get, history, delete, delete-all."""
from __future__ import annotations

import argparse
import json
import sys

from memstore.cli import add_period_args, add_scope_args, add_store_arg, open_memory, scope_from_args
from memstore.core.rules.signals import SIGNALS


def _explain_line(r: dict) -> str:
    ex = r.get("explain") or {}
    return (f"    channels {'+'.join(ex.get('channels', [])) or '-'}; signals "
            + " ".join(f"{s} {ex[s]:.2f}" for s in SIGNALS if ex.get(s) is not None))


def _print_memories(results: list[dict], as_json: bool, empty_hint: str, explain: bool = False,
                    dated: bool = False) -> None:
    if as_json:
        print(json.dumps(results, indent=2, ensure_ascii=False, default=str))
        return
    if not results:
        print(empty_hint, file=sys.stderr)
        return
    for r in results:
        score = f"{r['score']:.3f}  " if "score" in r else ""
        status = "" if r.get("status", "current") == "current" else f"  [{r['status']}]"
        when = (f"  (said {_stamp(r.get('valid_from') or r.get('created_at'))[:16]}, stored "
                f"{_stamp(r.get('created_at'))[:16]})") if dated else ""
        print(f"{score}{r['id']}  {r['memory']}{status}{when}")
        if explain:
            print(_explain_line(r))


def cmd_add(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.add(args.text, infer=not args.raw, **scope_from_args(args))
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        for r in out["results"]:
            print(f"{r['event']:<9} {r['id']}  {r['memory']}")
        ex = out["extraction"]
        if not out["results"]:
            print(f"nothing new stored (extraction {ex['status']}, {ex['deduplicated']} duplicate(s))", file=sys.stderr)
    return 0


NEED_SCOPE = ("error: {cmd} needs a scope: add --user NAME (and/or --agent NAME, --run ID), "
              "e.g. `memstore {cmd} {example}--user alice` (the store's scopes: "
              "`memstore sql 'SELECT user_id, agent_id, run_id, memories FROM scope_summary'`)")


def _need_scope(cmd: str, scope: dict, example: str = "") -> bool:
    """True (after printing the CLI form of the advice) when no --user / --agent / --run was given."""
    if scope:
        return False
    print(NEED_SCOPE.format(cmd=cmd, example=example), file=sys.stderr)
    return True


def cmd_search(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if _need_scope("search", scope, f"{json.dumps(args.query)} "):
        return 2
    with open_memory(args) as m:
        out = m.search(args.query, filters=scope, top_k=args.top_k, threshold=args.threshold, explain=args.explain)
    who = ", ".join(f"{k}={v}" for k, v in scope.items())
    empty = (f"no memories match for {who}" + (f" at or above --threshold {args.threshold}" if args.threshold else "")
             + f" — add some with `memstore add \"...\" --user {scope.get('user_id', 'NAME')}` or `memstore ingest FILE`")
    _print_memories(out["results"], args.json, empty, explain=args.explain)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if _need_scope("list", scope):
        return 2
    from memstore.analysis.periods import as_of_time, period_bounds

    since, until = period_bounds(args.since, args.until)
    as_of = as_of_time(args.as_of) if args.as_of else None
    windowed = since is not None or until is not None
    with open_memory(args) as m:
        out = m.get_all(filters=scope, top_k=100_000 if windowed else args.limit, include_superseded=args.all,
                        show_expired=args.all, as_of=as_of)
    rows = [r for r in out["results"] if _said_in(r.get("valid_from") or r.get("created_at"), since, until)]
    if as_of is not None:       # each was current then: say what became of it since
        rows = [{**r, "status": f"later {r['status']}"} if r.get("status", "current") != "current" else r for r in rows]
    who = ", ".join(f"{k}={v}" for k, v in scope.items())
    when = (f" said between {args.since or 'the start'} and {args.until or 'now'}" if windowed else "") + (
        f" as of {args.as_of}" if args.as_of else "")
    _print_memories(rows[:args.limit], args.json, (f"{who} has no memories{when}" if windowed or as_of else
                                                   f"{who} has no memories yet — ingest a chat export with "
                                                   f"`memstore ingest FILE --user {scope.get('user_id', 'NAME')}`"),
                    dated=True)
    return 0


def _said_in(value: object, since: object, until: object) -> bool:
    """Is a time (datetime or ISO text) in [since, until)? (None bounds are open.)"""
    from memstore.core.timeutil import parse_time

    if since is None and until is None:
        return True
    if value is None:
        return False
    t = parse_time(value, "time")
    return (since is None or t >= since) and (until is None or t < until)


def cmd_get(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        rec = m.get(args.id)
    if rec is None:
        print(f"error: no memory with id {args.id!r} — list ids with `memstore list --user NAME`", file=sys.stderr)
        return 1
    print(json.dumps(rec, indent=2, ensure_ascii=False, default=str))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from memstore.analysis.periods import period_bounds

    scope = scope_from_args(args)
    if not args.id and not scope:
        print("error: name a memory id, or a scope (--user NAME) for all of its events", file=sys.stderr)
        return 2
    since, until = period_bounds(args.since, args.until)
    with open_memory(args) as m:
        if args.id:
            rows = m.history(args.id)
        else:
            frame = m.frame("history", **scope).sort("said_at", "created_at", "id", nulls_last=True)
            rows = frame.select(c for c in ("id", "memory_id", "event", "old_memory", "new_memory", "actor_id",
                                            "created_at", "said_at") if c in frame.columns).to_dicts()
    rows = [r for r in rows if _said_in(r.get("said_at") or r.get("created_at"), since, until)]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return 0 if rows or not args.id else 1
    if not rows:
        what = repr(args.id) if args.id else ", ".join(f"{k}={v}" for k, v in scope.items())
        window = f" said between {args.since or 'the start'} and {args.until or 'now'}" if args.since or args.until else ""
        print(f"no history for {what}{window}", file=sys.stderr)
        return 1 if args.id else 0
    print(f"{'said (conversation)':19}  {'stored':19}  event")
    for r in rows:
        change = f"{r['old_memory'] or ''} -> {r['new_memory'] or ''}".strip(" ->")
        print(f"{_stamp(r.get('said_at')):19}  {_stamp(r.get('created_at')):19}  {r['event']:<9} {change}")
    return 0


def _stamp(value: object) -> str:
    """A time as 'YYYY-MM-DD HH:MM:SS' ('—' when unknown)."""
    return "—" if value is None else str(value).replace("T", " ")[:19]


def cmd_delete(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.delete(args.id)
    print(out["message"])
    return 0


def cmd_delete_all(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not args.yes:
        print("refusing without --yes: this deletes every memory of " + ", ".join(f"{k}={v}" for k, v in scope.items()),
              file=sys.stderr)
        return 2
    with open_memory(args) as m:
        print(m.delete_all(**scope)["message"])
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        out = m.optimize()
    print(f"re-clustered by scope in {out['seconds']} s: " +
          ", ".join(f"{k} {v:,} rows" for k, v in out.items() if k != "seconds"))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("add", help="remember facts from a message")
    p.add_argument("text", help="the message, e.g. \"I'm vegetarian\"")
    p.add_argument("--raw", action="store_true", help="store the text itself (infer=False)")
    p.add_argument("--json", action="store_true", help="print what was stored as JSON")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_add)

    p = sub.add_parser("search", help="search a scope's memories")
    p.add_argument("query", help="what to look for, e.g. \"where does alice live?\"")
    p.add_argument("--top-k", type=int, default=10, help="how many results at most (default 10)")
    p.add_argument("--threshold", type=float, default=None,
                   help="leave out results whose fused score (0-1) is below this (default: the store's "
                        "`threshold` config, none unless set)")
    p.add_argument("--explain", action="store_true",
                   help="show, under each result, the channels that found it and its signal values")
    p.add_argument("--json", action="store_true", help="print the results as JSON (with --explain: and the signals)")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_search)

    p = sub.add_parser("list", help="list a scope's memories (newest first)")
    p.add_argument("--limit", type=int, default=100, help="how many memories at most (default 100)")
    p.add_argument("--all", action="store_true", help="include superseded and expired memories")
    p.add_argument("--json", action="store_true", help="print the memories as JSON")
    add_period_args(p, as_of=True, what="memories that became true (conversation time)")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_list)

    p = sub.add_parser("get", help="show one memory as JSON")
    p.add_argument("id", help="the memory's id (from `memstore list`)")
    add_store_arg(p), p.set_defaults(func=cmd_get)

    p = sub.add_parser("history", help="events of one memory, or of a scope (--user NAME) in a period")
    p.add_argument("id", nargs="?", help="the memory's id (from `memstore list`); omit it to list a scope's events")
    p.add_argument("--json", action="store_true", help="print the events as JSON")
    add_period_args(p, what="events said (conversation time; stored time when unknown)")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_history)

    p = sub.add_parser("delete", help="delete one memory")
    p.add_argument("id", help="the memory's id (from `memstore list`)")
    add_store_arg(p), p.set_defaults(func=cmd_delete)

    p = sub.add_parser("optimize", help="re-cluster memories and postings by scope (after bulk ingest)")
    add_store_arg(p), p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("delete-all", help="delete every memory of a scope")
    p.add_argument("--yes", action="store_true", help="confirm")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_delete_all)
