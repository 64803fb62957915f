"""`memstore publish`: send a shard's changes since its last publish to the lake (DuckLake)."""
from __future__ import annotations

import argparse
import json

from memstore.cli import add_store_arg, store_path


def cmd_publish(args: argparse.Namespace) -> int:
    import os

    from memstore.api.connect import client_for
    from memstore.core.errors import LakeError, StoreNotFoundError
    from memstore.lake import publish
    from memstore.memory import Memory

    path = store_path(args)
    if not os.path.exists(path):
        raise StoreNotFoundError(f"no store at {path}", hint="check --store / $MEMSTORE_PATH", path=path)
    if client_for(path) is not None:
        raise LakeError(f"a server owns {path}",
                        hint="let the server publish: memstore serve --publish-to LAKE --publish-every 60s")
    tables = [t.strip() for t in args.tables.split(",")] if args.tables else None
    if tables is not None and args.messages and "messages" not in tables:
        tables.append("messages")
    elif tables is None and args.messages:
        from memstore.lake.tables import DEFAULT_TABLES

        tables = [*DEFAULT_TABLES, "messages"]
    m = Memory(path, embedded=True)
    try:
        report = publish(m.db, args.lake, data_path=args.data_path, shard=args.shard,
                         tables=tuple(tables) if tables else None, embeddings=args.embeddings,
                         compact=args.compact)
    finally:
        m.close()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        changed = {t: (report.inserted.get(t, 0), report.deleted.get(t, 0)) for t in report.inserted}
        print(f"published shard {report.shard!r}: " + (", ".join(f"{t} +{i}/-{d}" for t, (i, d) in changed.items()
                                                                if i or d) or "nothing changed")
              + (f" (snapshot {report.snapshot})" if report.snapshot is not None else "")
              + f" in {report.seconds:.2f}s")
        for target, v in report.erasures.items():
            print(f"  journaled erasure finished in the {target}: " + ("ok" if v.get("ok") else f"not ok: {v}"))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="publish the store's changes since its last publish to a DuckLake lake",
                       description="Send this shard's changes (memories, history, entities, postings, links, "
                                   "extraction runs) to a DuckLake lake with a PostgreSQL catalog, in one lake "
                                   "transaction. Safe to repeat and to kill: the next publish completes it.")
    add_store_arg(p)
    p.add_argument("--lake", required=True, help="the lake's catalog: postgres:dbname=... host=... port=... user=...")
    p.add_argument("--data-path", default=None, help="folder of the lake's Parquet files (needed the first time)")
    p.add_argument("--shard", default=None, help="this store's name in the lake (default: the store file's name)")
    p.add_argument("--tables", default=None, help="comma-separated store tables (default: all but messages and reads, the audit of reads)")
    p.add_argument("--messages", action="store_true", help="also publish the raw conversation messages")
    p.add_argument("--embeddings", action="store_true", help="also publish memory embeddings (as FLOAT[])")
    p.add_argument("--compact", action="store_true",
                   help="afterwards merge small files and expire snapshots older than 7 days (run it daily)")
    p.add_argument("--json", action="store_true", help="print the publish report as JSON")
    p.set_defaults(func=cmd_publish)
