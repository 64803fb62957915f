"""`memstore cluster`: many shards behind HAProxy (config, placement, rebalance)."""
from __future__ import annotations

import argparse
import json
import os
import sys


def _urls(text: str) -> list[str]:
    return [u.strip() for u in text.split(",") if u.strip()]


def cmd_haproxy(args: argparse.Namespace) -> int:
    from memstore.cluster.haproxy import haproxy_config

    sys.stdout.write(haproxy_config(_urls(args.shards), bind=args.bind, tls_cert=args.tls_cert,
                                    check_interval_ms=args.check_interval_ms))
    return 0


def cmd_place(args: argparse.Namespace) -> int:
    from memstore.core.placement import shard_of_key, slot_of
    from memstore.core.scope_rule import canonical_id

    for given in args.keys:
        key = canonical_id(given)           # placed by its canonical form (core/scope_rule.py)
        shown = key if key == given else f"{key} (given {given!r})"
        print(f"{shown}\tslot {slot_of(key)}\tshard {shard_of_key(key, args.shards)}/{args.shards}")
    return 0


def cmd_rebalance(args: argparse.Namespace) -> int:
    from memstore.cluster.rebalance import rebalance

    token = args.token or os.environ.get("MEMSTORE_TOKEN")
    report = rebalance(_urls(args.old), _urls(args.new), token=token, staging=args.staging,
                       log=lambda s: print(s, file=sys.stderr, flush=True))
    print(json.dumps({"moved": len(report["moved"]), "not_moved": report["not_moved"], "stayed": report["stayed"],
                      "receipts": [m["receipt"]["id"] for m in report["moved"]],
                      "journal": report["journal"]}, indent=2, default=str))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="many `memstore serve --shard i/N` behind HAProxy: config, placement, "
                                       "rebalance",
                       description="Shard scopes over many servers. Placement: jump consistent hash of the "
                                   "scope's user_id (else agent_id, else run_id); see the README, 'Many machines'.")
    cs = p.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)
    h = cs.add_parser("haproxy", help="print the HAProxy config that routes each scope to its shard")
    h.add_argument("--shards", required=True, help="shard URLs in shard order, comma-separated "
                                                   "(http://h0:9000,http://h1:9001,...)")
    h.add_argument("--bind", default="127.0.0.1:8765", help="address the balancer listens on (default "
                                                            "127.0.0.1:8765; others need --tls-cert)")
    h.add_argument("--tls-cert", default=None, help="PEM (certificate + key) for HTTPS on the balancer")
    h.add_argument("--check-interval-ms", type=int, default=1000, help="health check interval (default 1000)")
    h.set_defaults(func=cmd_haproxy)
    pl = cs.add_parser("place", help="which slot and shard own a user (or agent/run) id")
    pl.add_argument("keys", nargs="+", help="user ids (or agent/run ids of scopes without a user)")
    pl.add_argument("--shards", type=int, required=True, help="number of shards")
    pl.set_defaults(func=cmd_place)
    r = cs.add_parser("rebalance", help="after growing N -> M shards: move the users whose shard changed "
                                        "(copy, verify, forget with a receipt); safe to re-run")
    r.add_argument("--from", dest="old", required=True, help="the N old shard URLs, in shard order")
    r.add_argument("--to", dest="new", required=True, help="the M new shard URLs, in shard order (already "
                                                           "serving --shard i/M, balancer reloaded)")
    r.add_argument("--staging", required=True, help="folder every shard can read at the same path (the copies "
                                                    "and the journal)")
    r.add_argument("--token", default=None, help="the shards' bearer token (default $MEMSTORE_TOKEN)")
    r.set_defaults(func=cmd_rebalance)
