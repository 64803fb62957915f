"""Core subcommands: add, search, list, get, history, delete, delete-all."""
from __future__ import annotations

import argparse
import json
import sys

from memstore.cli import add_scope_args, add_store_arg, open_memory, scope_from_args
from memstore.core.rules.signals import SIGNALS


def _explain_line(r: dict) -> str:
    ex = r.get("explain") or {}
    return (f"    channels {'+'.join(ex.get('channels', [])) or '-'}; signals "
            + " ".join(f"{s} {ex[s]:.2f}" for s in SIGNALS if ex.get(s) is not None))


def _print_memories(results: list[dict], as_json: bool, empty_hint: str, explain: bool = False) -> None:
    if as_json:
        print(json.dumps(results, indent=2, ensure_ascii=False, default=str))
        return
    if not results:
        print(empty_hint, file=sys.stderr)
        return
    for r in results:
        score = f"{r['score']:.3f}  " if "score" in r else ""
        status = "" if r.get("status", "current") == "current" else f"  [{r['status']}]"
        print(f"{score}{r['id']}  {r['memory']}{status}")
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
    with open_memory(args) as m:
        out = m.get_all(filters=scope, top_k=args.limit, include_superseded=args.all, show_expired=args.all)
    who = ", ".join(f"{k}={v}" for k, v in scope.items())
    _print_memories(out["results"], args.json, f"{who} has no memories yet — ingest a chat export with "
                    f"`memstore ingest FILE --user {scope.get('user_id', 'NAME')}`")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        rec = m.get(args.id)
    if rec is None:
        print(f"error: no memory with id {args.id!r} — list ids with `memstore list --user NAME`", file=sys.stderr)
        return 1
    print(json.dumps(rec, indent=2, ensure_ascii=False, default=str))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with open_memory(args) as m:
        rows = m.history(args.id)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return 0 if rows else 1
    if not rows:
        print(f"no history for {args.id!r}", file=sys.stderr)
        return 1
    for r in rows:
        change = f"{r['old_memory'] or ''} -> {r['new_memory'] or ''}".strip(" ->")
        print(f"{r['created_at']}  {r['event']:<9} {change}")
    return 0


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
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_list)

    p = sub.add_parser("get", help="show one memory as JSON")
    p.add_argument("id", help="the memory's id (from `memstore list`)")
    add_store_arg(p), p.set_defaults(func=cmd_get)

    p = sub.add_parser("history", help="events of one memory")
    p.add_argument("id", help="the memory's id (from `memstore list`)")
    p.add_argument("--json", action="store_true", help="print the events as JSON")
    add_store_arg(p), p.set_defaults(func=cmd_history)

    p = sub.add_parser("delete", help="delete one memory")
    p.add_argument("id", help="the memory's id (from `memstore list`)")
    add_store_arg(p), p.set_defaults(func=cmd_delete)

    p = sub.add_parser("optimize", help="re-cluster memories and postings by scope (after bulk ingest)")
    add_store_arg(p), p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("delete-all", help="delete every memory of a scope")
    p.add_argument("--yes", action="store_true", help="confirm")
    add_scope_args(p), add_store_arg(p), p.set_defaults(func=cmd_delete_all)
