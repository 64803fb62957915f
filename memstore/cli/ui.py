"""`memstore ui`: open the Streamlit dashboard (memstore/dashboard/) on a store.

    memstore ui                              # $MEMSTORE_PATH, else the demo store
    memstore ui --store runs/a.duckdb --port 8502
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from memstore.cli import add_store_arg

APP = Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="open the inspection dashboard in the browser (needs memstore[app])",
                       description="Run the Streamlit dashboard on a store: memories, extractions, search lab, "
                                   "timeline and contradictions, expirations, entities, governance.")
    add_store_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    p.add_argument("--headless", action="store_true", help="do not open a browser window")
    p.set_defaults(func=cmd_ui)


def streamlit_command(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that `memstore ui` runs."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.address", args.host,
           "--server.port", str(args.port), "--browser.gatherUsageStats", "false"]
    if args.headless:
        cmd += ["--server.headless", "true"]
    env = dict(os.environ)
    if args.store:
        env["MEMSTORE_PATH"] = os.path.abspath(args.store)
    return cmd, env


def cmd_ui(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("streamlit") is None:
        print("error: the dashboard needs Streamlit — install it with: pip install 'memstore[app]'", file=sys.stderr)
        return 1
    cmd, env = streamlit_command(args)
    print(f"dashboard on http://{args.host}:{args.port}  (Ctrl+C to stop)", file=sys.stderr)
    return subprocess.call(cmd, env=env)
