"""`memstore reembed --store s.duckdb --embedder PROVIDER[:MODEL] [--on-ray ADDRESS]` (Memory.reembed)."""
from __future__ import annotations

import argparse
import json
import sys
import warnings

from memstore.cli import add_store_arg, open_memory


def cmd_reembed(args: argparse.Namespace) -> int:
    from memstore.core.config import EmbedderConfig
    from memstore.providers.factory import build_embedder, embedder_spec

    section = embedder_spec(args.embedder)
    with warnings.catch_warnings():          # the store's embedder is about to change: no mismatch warning
        warnings.simplefilter("ignore", RuntimeWarning)
        m = open_memory(args, must_exist=True, embedder=section)
    with m:
        if not hasattr(m, "reembed"):
            print(f"error: a server owns {m.path}: stop it, re-embed, and start it again with the new embedder "
                  f"(--config '{{\"embedder\": {json.dumps(section)}}}')", file=sys.stderr)
            return 2
        embed = None
        if args.on_ray is not None:
            from memstore.on_ray.reembed import ray_embed

            dim = build_embedder(EmbedderConfig(**section)).dim
            embed = ray_embed(section, address=args.on_ray, actors=args.actors, dim=dim)
        last = [0]

        def progress(done: int, total: int) -> None:
            if not args.quiet and sys.stderr.isatty() and done - last[0] >= 1000:
                print(f"\rre-embedded {done:,} of {total:,} memories", end="", file=sys.stderr)
                last[0] = done

        out = m.reembed(section, batch=args.batch, embed=embed, progress=progress)
    print(json.dumps(out, indent=2) if args.json else
          f"re-embedded {out['memories']:,} memories with {out['embedder']} in {out['seconds']:.1f}s"
          + (f" (resumed a job at {out['resumed_from']:,})" if out["resumed_from"] else "")
          + ("; HNSW index rebuilt" if out["hnsw_rebuilt"] else "")
          + f". Open the store with this embedder from now on (config embedder: {json.dumps(section)}).")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add this area's subcommands to the parser."""
    p = sub.add_parser("reembed", help="re-embed every memory with another embedding model",
                       description="Make the new model's vector of every memory while searches keep using the "
                                   "old ones, then swap them in with the new embedder in one transaction. "
                                   "Resumable: run the same command again after an interruption.")
    p.add_argument("--embedder", required=True, metavar="PROVIDER[:MODEL]",
                   help="the new embedder: local, static, openai:MODEL, hashing[:DIM] (same vector size as the store)")
    p.add_argument("--on-ray", default=None, metavar="ADDRESS",
                   help="make the vectors on Ray actors (auto, or ray://HOST:PORT); needs memstore[ray]")
    p.add_argument("--actors", type=int, default=None, help="with --on-ray: Ray actors embedding (default: one per CPU)")
    p.add_argument("--batch", type=int, default=512, help="memories per batch (a crash loses at most one; default 512)")
    p.add_argument("--json", action="store_true", help="print the job's figures as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    add_store_arg(p)
    p.set_defaults(func=cmd_reembed)
