"""Integration subcommands: `memstore mcp` (an MCP server on stdio for one user) and
`memstore import-mem0` (read an existing mem0 OSS store into this one). The `mcp` SDK and
qdrant-client are imported only when these commands run."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading

from memstore.cli import add_scope_args, add_store_arg, open_memory, scope_from_args


def cmd_mcp(args: argparse.Namespace) -> int:
    scope = scope_from_args(args)
    if not scope:
        print("error: say whose memories this server serves: --user NAME (or --agent / --run); "
              "a tool call can never reach another scope", file=sys.stderr)
        return 2
    from memstore.core.scope_rule import canonical_scope

    scope = canonical_scope(scope)      # the one scope rule: an id it refuses stops here (IdentityError)
    try:
        from memstore.integrations.mcp_server import run_stdio
    except ImportError as exc:
        print(f"error: the MCP server needs the `mcp` package ({exc}) — pip install 'memstore[mcp]'", file=sys.stderr)
        return 1
    # stdout is the protocol channel: nothing else may write to it, so opening the store talks to stderr
    with contextlib.redirect_stdout(sys.stderr):
        memory = open_memory(args)
    # Load spaCy and the embedder while the client initialises, so the first tool call is not the
    # one that waits seconds for them; joined before the store closes.
    warm = threading.Thread(target=_warm_up, args=(memory, scope), daemon=True)
    warm.start()
    with memory:
        try:
            run_stdio(memory, scope, actor_id=f"mcp:{args.client}")
        finally:
            warm.join(60)
    return 0


def _warm_up(memory, scope: dict) -> None:
    with contextlib.suppress(Exception):
        memory.search("warm up", filters=dict(scope), top_k=1)


def _mem0_config_file(path: str) -> object:
    """mem0's config as the file holds it (JSON, or YAML as mem0's docs load it): only the places
    of its data are read (vector_store, history_db_path)."""
    import os

    from memstore.core.errors import ConfigError, MissingFileError
    from memstore.core.mem0_config import map_mem0_config

    if not os.path.isfile(path):
        raise MissingFileError(f"no mem0 config file at {path}", hint="pass the JSON or YAML file of mem0's config")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is neither JSON nor YAML: {exc}") from None
    return map_mem0_config(data)


def cmd_import_mem0(args: argparse.Namespace) -> int:
    from memstore.api.interop import mem0_sources

    mapping = _mem0_config_file(args.mem0_config) if args.mem0_config else None
    qdrant_path, collection, history = mem0_sources(mapping, args.qdrant_path, args.collection, args.history)
    with open_memory(args) as m:
        if not hasattr(m, "import_mem0"):
            print("error: a running `memstore serve` owns this store; the import writes the file itself — stop "
                  "the server, run the import, then start it again", file=sys.stderr)
            return 1
        report = m.import_mem0(qdrant_path, collection=collection, history=history,
                               keep_vectors=args.keep_vectors, batch_size=args.batch_size)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        print(f"read {report['read']} mem0 memories, imported {report['imported']}, skipped {report['skipped']}"
              f" ({report['seconds']:.1f} s, {report['memories_per_s']:.0f} memories/s); "
              f"history rows imported: {report['history_imported']}; vectors: {report['vectors']}")
        for reason, n in sorted(report["skipped_by_reason"].items()):
            print(f"  skipped {n:>6}  {reason}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("mcp", help="serve one user's memories to an MCP client over stdio",
                       description="Model Context Protocol server on stdin/stdout (Claude Desktop, Cursor, ...). "
                                   "Every tool call is confined to the scope given here.")
    add_store_arg(p)
    add_scope_args(p)
    p.add_argument("--client", default="stdio", help="name recorded as the writer of memories (actor mcp:NAME)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("import-mem0", help="import an existing mem0 OSS store (Qdrant local folder + history.db)",
                       description="Read a mem0 store and write its memories (ids, text, identity, metadata, "
                                   "times) and history here; entities and keywords are rebuilt offline. "
                                   "Running it again imports only what is new.")
    p.add_argument("qdrant_path", metavar="QDRANT_DIR", nargs="?", default=None,
                   help="mem0's Qdrant local-mode folder (vector_store.config.path; mem0's default /tmp/qdrant)")
    p.add_argument("--qdrant-path", dest="qdrant_path_opt", default=None, help="same as QDRANT_DIR")
    p.add_argument("--collection", default=None, help="Qdrant collection (default: the config's, else mem0)")
    p.add_argument("--mem0-config", default=None, metavar="CONFIG",
                   help="mem0's config (JSON or YAML, the dict given to mem0's Memory.from_config): the Qdrant "
                        "folder, collection and history_db_path are read from it")
    p.add_argument("--history", default=None, metavar="history.db",
                   help="mem0's SQLite history (history_db_path; default: none, an ADD event per memory)")
    p.add_argument("--keep-vectors", action="store_true",
                   help="keep mem0's vectors when their dimension matches this store's (else re-embed)")
    p.add_argument("--batch-size", type=int, default=500, help="memories per write transaction (default 500)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_store_arg(p)
    p.set_defaults(func=_import_entry)


def _import_entry(args: argparse.Namespace) -> int:
    args.qdrant_path = args.qdrant_path or args.qdrant_path_opt
    if not args.qdrant_path and not args.mem0_config:
        print("error: name mem0's Qdrant folder: memstore import-mem0 DIR --store PATH (or --mem0-config "
              "mem0.yaml)", file=sys.stderr)
        return 2
    return cmd_import_mem0(args)
