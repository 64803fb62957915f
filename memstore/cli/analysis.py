"""`memstore` subcommands for the analysis area: sql, export, import."""
from __future__ import annotations

import argparse
import json
import os
import sys

from memstore.cli import add_store_arg, open_memory


def cmd_sql(args: argparse.Namespace) -> int:
    import polars as pl

    from memstore.core.config import DEFAULT_PATH

    path = args.store or os.environ.get("MEMSTORE_PATH") or DEFAULT_PATH
    if not os.path.exists(path):
        print(f"error: no store at {path} — pass --store PATH, or create one with `memstore add \"...\" --user NAME`",
              file=sys.stderr)
        return 1
    with open_memory(args, read_only=True) as m:
        df = m.sql(args.query, allow_files=args.allow_files)
    if args.format == "csv":
        sys.stdout.write(df.write_csv())
    elif args.format == "json":
        sys.stdout.write(df.write_ndjson())
    else:
        with pl.Config(tbl_rows=args.limit, tbl_cols=-1, fmt_str_lengths=80, tbl_width_chars=200):
            print(df.head(args.limit))
    if df.is_empty():
        print("(no rows) — list the tables with `memstore sql \"SHOW TABLES\"`", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    scope = {k: v for k, v in (("user_id", args.user_id), ("agent_id", args.agent_id), ("run_id", args.run_id)) if v}
    partition = None if args.partition_by == "none" else args.partition_by
    with open_memory(args) as m:
        manifest = m.export_parquet(args.dir, scope=scope or None, partition_by=partition,
                                    **({"include_reads": True} if args.include_reads else {}))
    rows = sum(t["rows"] for t in manifest["tables"].values())
    print(f"exported {len(manifest['tables'])} tables ({rows} rows, {len(manifest['files'])} files) to "
          f"{os.path.join(args.dir, 'manifest.json')}")
    if args.json:
        print(json.dumps(manifest, indent=2, ensure_ascii=False, default=str))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from memstore import Memory

    m = Memory.import_parquet(args.dir, args.store)
    try:
        n = m.sql("SELECT count(*) AS n FROM memories")["n"][0]
    finally:
        m.close()
    print(f"imported {args.dir} into {args.store} ({n} memories); search it with "
          f"`memstore search QUERY --user NAME --store {args.store}`")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("sql", help="run one read-only SQL query and print the result")
    p.add_argument("query", help="e.g. \"SELECT user_id, count(*) FROM memories GROUP BY ALL\"")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table (default), csv, or json (one object per line)")
    p.add_argument("--limit", type=int, default=50, help="rows shown in table format (default 50)")
    p.add_argument("--allow-files", action="store_true", help="permit read_csv / read_parquet / ... in the query")
    add_store_arg(p), p.set_defaults(func=cmd_sql)

    p = sub.add_parser("export", help="export every table as Parquet with a manifest")
    p.add_argument("dir", help="new or empty directory to write")
    p.add_argument("--user", dest="user_id", help="export only this user's rows")
    p.add_argument("--agent", dest="agent_id", help="export only this agent's rows")
    p.add_argument("--run", dest="run_id", help="export only this run's rows")
    p.add_argument("--partition-by", default="user_id", choices=("user_id", "agent_id", "run_id", "scope_key", "none"),
                   help="one file per value of this column (default user_id; none: one file per table)")
    p.add_argument("--include-reads", action="store_true", help="also the audit of reads (who read what)")
    p.add_argument("--json", action="store_true", help="also print the manifest")
    add_store_arg(p), p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="build a new store from a Parquet export")
    p.add_argument("dir", help="export directory (holds manifest.json)")
    p.add_argument("--store", required=True, help="path of the NEW store to create")
    p.set_defaults(func=cmd_import)
