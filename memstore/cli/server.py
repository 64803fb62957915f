"""`memstore serve`: run the one server that owns a store; every other tool becomes its client."""
from __future__ import annotations

import argparse
import os

from memstore.cli import add_store_arg


def cmd_serve(args: argparse.Namespace) -> int:
    from memstore.core.config import DEFAULT_PATH
    from memstore.server.serve import serve

    store = args.store or os.environ.get("MEMSTORE_PATH") or DEFAULT_PATH
    config = _config(args.config)
    if args.max_body is not None:           # the same as config key limits.max_body_bytes
        from memstore.core.limits import parse_size

        config = dict(config or {})
        config["limits"] = {**(config.get("limits") or {}), "max_body_bytes": parse_size(args.max_body)}
    return serve(store, host=args.host, port=args.port, analyst_api=not args.no_analyst_api, config=config,
                 ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile, log_level=args.log_level,
                 group_commit=not args.no_group_commit, shard=args.shard, workers=args.workers,
                 fronts=args.fronts,
                 publish_to=args.publish_to, publish_every=args.publish_every, publish_data_path=args.publish_data_path)


def _config(text: str | None) -> dict | None:
    """--config: a JSON file, or inline JSON (e.g. '{"embedder": {"provider": "hashing"}}')."""
    import json

    from memstore.core.errors import ConfigError

    if not text:
        return None
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        with open(text, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--config {text!r} is neither a readable JSON file nor inline JSON: {exc}",
                          hint="pass a file holding the config dict (as for Memory(config=...))") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="own the store and serve it over HTTP (mem0 REST paths + memstore API)",
                       description="Run the one process that owns the store file. Memory(path), the CLI, the "
                                   "dashboard and agents then connect to it (discovered via <store>.server.json).")
    add_store_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need TLS)")
    p.add_argument("--port", type=int, default=None, help="port (default 8765, or a free one when it is taken)")
    p.add_argument("--no-analyst-api", action="store_true",
                   help="refuse methods that read or change more than one scope (sql, search_all, frame without "
                        "a scope, export, doctor, optimize, reset, retention)")
    p.add_argument("--ssl-certfile", default=None, help="TLS certificate (needed to bind a non-loopback address)")
    p.add_argument("--ssl-keyfile", default=None, help="TLS private key")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (default warning)")
    p.add_argument("--config", default=None, help="config as for Memory(config=...): a JSON file or inline JSON")
    p.add_argument("--no-group-commit", action="store_true", help="commit each add in its own transaction")
    p.add_argument("--max-body", default=None, metavar="SIZE",
                   help="largest request body, e.g. 4MB (default 4MB; config key limits.max_body_bytes); a larger "
                        "one is answered 413 unread. Uploads: limits.max_upload_bytes")
    p.add_argument("--workers", type=int, default=None,
                   help="processes that run the model work of adds: the extractor call, spaCy, the embedder "
                        "(default: one per core; 0: all in the server process)")
    p.add_argument("--fronts", default="auto", metavar="N|auto",
                   help="processes that take the HTTP and the model work of adds and searches, so this one only "
                        "authenticates, commits and searches (default auto: one per core, at most 4, on a machine "
                        "with 2 or more cores, none for a --shard; 0: all HTTP in this process; with fronts, "
                        "--workers defaults to 0)")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="serve shard I of a cluster of N (0-based): scopes another shard owns are refused "
                        "(see `memstore cluster`)")
    p.add_argument("--publish-to", default=None, metavar="LAKE",
                   help="publish the store to a DuckLake lake (postgres:dbname=... host=...) while serving")
    p.add_argument("--publish-every", default="60s", help="interval between publishes (default 60s)")
    p.add_argument("--publish-data-path", default=None, help="the lake's Parquet folder (needed the first time)")
    p.set_defaults(func=cmd_serve)
