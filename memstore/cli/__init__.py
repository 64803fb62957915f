"""`memstore` command line: thin commands over the library; errors become advice.

Each feature area registers its subcommands in its own module (core, truth, governance, ingest,
analysis); `main` only builds the parser and turns exceptions into messages.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from memstore.core.errors import MemstoreError

COMMAND_MODULES = ("core", "truth", "governance", "ingest", "reembed", "analysis", "ui", "server", "integrations", "tokens",
                   "cluster", "lake", "reads")


def add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None,
                   help="store path (default: $MEMSTORE_PATH, else ./data/memstore.duckdb)")


def add_scope_args(p: argparse.ArgumentParser) -> None:
    """--user / --agent / --run, the identity of the scope a command works on."""
    p.add_argument("--user", dest="user_id", help="user id")
    p.add_argument("--agent", dest="agent_id", help="agent id")
    p.add_argument("--run", dest="run_id", help="run / session id")


def add_period_args(p: argparse.ArgumentParser, *, what: str, as_of: bool = False) -> None:
    """--since / --until (and --as-of): a period of conversation time, as dates or ISO times."""
    p.add_argument("--since", metavar="DATE", help=f"only {what} on or after DATE (e.g. 2024-05-01)")
    p.add_argument("--until", metavar="DATE", help=f"only {what} up to DATE (a date: through that whole day)")
    if as_of:
        p.add_argument("--as-of", dest="as_of", metavar="DATE",
                       help="as things stood at DATE (a date: the end of that day): what was current then")


def scope_from_args(args: argparse.Namespace) -> dict:
    """The identity keys given on the command line, e.g. {"user_id": "alice"}."""
    return {k: getattr(args, k) for k in ("user_id", "agent_id", "run_id") if getattr(args, k, None)}


# Commands that only read: on a store that does not exist they say so instead of creating it.
READ_COMMANDS = frozenset({"search", "list", "get", "history", "timeline", "contradictions", "receipts", "sql",
                           "export", "doctor", "ui", "reads"})


def store_path(args: argparse.Namespace) -> str:
    """--store, else $MEMSTORE_PATH, else the default store (data/memstore.duckdb)."""
    from memstore.core.config import DEFAULT_PATH

    return getattr(args, "store", None) or os.environ.get("MEMSTORE_PATH") or DEFAULT_PATH


def open_memory(args: argparse.Namespace, *, must_exist: bool = False, **config: Any):
    """The store named by --store / MEMSTORE_PATH / the default: a client of its server when one
    runs (the heavy stack is then never imported), else the file opened in this process.
    `must_exist` (read commands): a missing store is an error, not a new empty file."""
    from memstore.api.connect import client_for

    path = store_path(args)
    client = client_for(path)
    if client is not None:
        return client
    must_exist = must_exist or getattr(args, "command", None) in READ_COMMANDS
    if must_exist and not os.path.exists(path) and path != ":memory:":
        from memstore.core.errors import StoreNotFoundError

        raise StoreNotFoundError(f"no store at {path}",
                                 hint="check --store / $MEMSTORE_PATH; a store is created by the first write "
                                      "(`memstore add` or `memstore ingest`)", path=path)
    from memstore.memory import Memory

    return Memory(path, config=config or None, embedded=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memstore", description="Long-term memory for AI agents in one DuckDB file.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"memstore.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MemstoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; what was committed stays committed", file=sys.stderr)
        return 130
