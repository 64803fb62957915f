"""`memstore ingest FILE... --user alice`: load chat exports (see Memory.ingest)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memstore.cli import add_store_arg, open_memory
from memstore.ingest.formats import FORMATS


def cmd_ingest(args: argparse.Namespace) -> int:
    if not (args.user_id or args.agent_id or args.run_id):
        print("error: say whose conversations these are: --user NAME (or --agent / --run)", file=sys.stderr)
        return 2
    config: dict = {}
    if args.llm_base_url or args.llm_model:
        config["llm"] = {"provider": "openai", "base_url": args.llm_base_url, "api_key": args.llm_api_key}
        if args.llm_model:
            config["llm"]["model"] = args.llm_model
    if args.on_ray is not None:
        return _on_ray(args, config)
    if args.to is not None or args.actors is not None:
        print("error: --to and --actors go with --on-ray (without it, --store names the store)", file=sys.stderr)
        return 2
    with open_memory(args, **config) as m:
        report = m.ingest(args.files, user_id=args.user_id, agent_id=args.agent_id, run_id=args.run_id,
                          format=args.format, mapping=args.map, batch_size=args.batch_size,
                          concurrency=args.concurrency, max_message_chars=args.max_message_chars,
                          commit_messages=args.commit_messages,
                          progress=False if args.quiet else None,
                          **({"workers": args.workers} if args.workers is not None else {}))
    return _print_report(args, report)


def _on_ray(args: argparse.Namespace, config: dict) -> int:
    """The model work on Ray, the commit at --to's owner (memstore/on_ray/ingest.py)."""
    from memstore.cli import store_path
    from memstore.on_ray.ingest import ingest_files
    from memstore.providers.factory import embedder_spec

    if args.embedder:
        config["embedder"] = embedder_spec(args.embedder)
    to = args.to or store_path(args)
    report = ingest_files(args.files, to=to, user_id=args.user_id, agent_id=args.agent_id, run_id=args.run_id,
                          config=config, address=args.on_ray, actors=args.actors, format=args.format,
                          mapping=args.map, batch_size=args.batch_size, concurrency=args.concurrency,
                          max_message_chars=args.max_message_chars, commit_messages=args.commit_messages,
                          progress=False if args.quiet else None, token=args.token)
    return _print_report(args, report)


def _print_report(args: argparse.Namespace, report: Any) -> int:
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print(report.summary())
    if report.status != "done":
        print("some messages were not stored (see above); what was stored stays — fix the input or the "
              "endpoint and run the same command again to complete the rest", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("ingest", help="load chat exports (ChatGPT, Claude, LoCoMo, JSONL/CSV/Parquet)",
                       description="Load chat exports into a scope. Re-running adds nothing new; a run that "
                                   "was interrupted completes the rest.")
    p.add_argument("files", nargs="+", metavar="FILE", help="conversations.json, export .zip, .jsonl, .csv, .parquet")
    p.add_argument("--user", dest="user_id", help="user id the conversations belong to")
    p.add_argument("--agent", dest="agent_id", help="agent id")
    p.add_argument("--run", dest="run_id", help="run / session id")
    p.add_argument("--format", default="auto", choices=("auto",) + FORMATS, help="input format (default: auto)")
    p.add_argument("--map", default=None, metavar="FIELD=COLUMN,...",
                   help="columns of JSONL/CSV/Parquet rows, e.g. role=author,content=text,ts=created "
                        "(fields: content, role, ts, conversation, id, name)")
    p.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint for extraction "
                                                        "(default: the offline heuristic extractor)")
    p.add_argument("--llm-model", default=None, help="model name at that endpoint")
    p.add_argument("--llm-api-key", default=None, help="API key (default: $OPENAI_API_KEY)")
    p.add_argument("--concurrency", type=int, default=8, help="LLM calls in flight (default 8)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes running spaCy and the embedder (default: the server's, or none; 0: none)")
    p.add_argument("--batch-size", type=int, default=20, help="messages per extraction call (default 20)")
    p.add_argument("--commit-messages", type=int, default=2000,
                   help="messages per write transaction, whole conversations (default 2000)")
    p.add_argument("--max-message-chars", type=int, default=None,
                   help="longer messages are skipped and reported (default: the config key limits.max_message_chars, "
                        "200000, the limit add() applies too)")

    p.add_argument("--on-ray", default=None, metavar="ADDRESS",
                   help="run extraction, spaCy and the embedder on Ray (auto: the running cluster, else a local "
                        "one; or ray://HOST:PORT); the store's owner commits. Needs memstore[ray]")
    p.add_argument("--to", default=None, metavar="STORE|URL",
                   help="with --on-ray: a store file, a server's URL or a cluster balancer's URL (default: --store)")
    p.add_argument("--actors", type=int, default=None, help="with --on-ray: Ray actors preparing (default: one per CPU)")
    p.add_argument("--embedder", default=None, metavar="PROVIDER[:MODEL]",
                   help="with --on-ray: the store's embedder (default: local; e.g. hashing, openai:MODEL)")
    p.add_argument("--token", default=None, help="with --on-ray and a URL: the API token (default: $MEMSTORE_TOKEN)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_store_arg(p)
    p.set_defaults(func=cmd_ingest)
