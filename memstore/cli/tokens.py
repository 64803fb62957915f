"""`memstore token create | list | revoke`: bearer tokens that carry a scope.

Offline they change the store file; with `memstore serve` running they go through it (with its
admin token), which applies a revocation from the next request on.
"""
from __future__ import annotations

import argparse
import json
import sys

from memstore.cli import add_scope_args, add_store_arg, open_memory, scope_from_args


def _dump(obj: object) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def cmd_create(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not scope:
        print("error: a token needs a scope — add --user NAME (or --agent / --run); the admin token is the "
              "server's own (<store>.server-token)", file=sys.stderr)
        return 2
    with open_memory(args, must_exist=True) as m:
        made = m.create_token(args.name, **scope, read_only=args.read_only, expires=args.expires)
    if args.json:
        _dump(made)
        return 0
    who = ", ".join(f"{k}={v}" for k, v in scope.items())
    print(made["token"])
    print(f"token {made['name']!r}: {who}, {'read-only' if made['read_only'] else 'read-write'}, "
          f"expires {made['expires_at'] or 'never'}. It is shown once: only its hash is stored.",
          file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with open_memory(args, must_exist=True) as m:
        rows = m.list_tokens()
    if args.json:
        _dump(rows)
        return 0
    if not rows:
        print("no tokens (the server's admin token is <store>.server-token)", file=sys.stderr)
        return 0
    head = ("name", "scope", "rights", "created_at", "last_used_at", "expires_at", "status")
    table = [head] + [tuple(str(r[k] or "-") for k in head) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    with open_memory(args, must_exist=True) as m:
        m.revoke_token(args.name)
    print(f"revoked {args.name!r}: a server refuses it from the next request on")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("token", help="bearer tokens that carry a scope (create / list / revoke)",
                       description="Tokens for `memstore serve` that open one scope only (a user, an agent, a "
                                   "run), optionally read-only and expiring. The server's own token stays admin.")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    c = tsub.add_parser("create", help="make a token for a scope and print it once")
    add_store_arg(c)
    add_scope_args(c)
    c.add_argument("--name", required=True, help="a unique name, e.g. alice-laptop (history records writes as "
                                                "actor token:NAME)")
    c.add_argument("--read-only", action="store_true", help="refuse writes made with it")
    c.add_argument("--expires", default=None, help="a duration (30d, 12h, 2w) or a date (2026-12-31); default never")
    c.add_argument("--json", action="store_true", help="print the whole record as JSON")
    c.set_defaults(func=cmd_create)
    ls = tsub.add_parser("list", help="name, scope, rights, created, last used, expires (never the token)")
    add_store_arg(ls)
    ls.add_argument("--json", action="store_true", help="JSON output")
    ls.set_defaults(func=cmd_list)
    r = tsub.add_parser("revoke", help="delete a token: refused from the next request on")
    add_store_arg(r)
    r.add_argument("name", help="the token's name (see `memstore token list`)")
    r.set_defaults(func=cmd_revoke)
