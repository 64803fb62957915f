"""`memstore ui`: open the Streamlit dashboard (memstore/dashboard/) on a store.

    memstore ui                              # $MEMSTORE_PATH, else data/memstore.duckdb (built from data/demo if missing)
    memstore ui --store runs/a.duckdb --port 8502
    memstore ui --lake "postgres:dbname=lake host=db1"   # the whole fleet: Overview + Fleet pages of a lake

The dashboard is a client of the store's server: when none runs, `memstore ui` starts one (and
says so) and stops it again on exit, so notebooks, ingest and agents can use the store meanwhile.
With `--lake` (or $MEMSTORE_LAKE) the Overview reads the lake every shard publishes into; with a
lake and no store named (no --store, no $MEMSTORE_PATH) no store is opened and no server started.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
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
    p.add_argument("--lake", default=None, metavar="LAKE",
                   help="a lake the shards publish into (postgres:dbname=... host=...; else $MEMSTORE_LAKE): "
                        "the Overview shows every shard, and a Fleet page lists them")
    p.add_argument("--no-server", action="store_true",
                   help="open the file in the dashboard itself instead of starting a memstore server for it")
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
    if getattr(args, "lake", None):
        env["MEMSTORE_LAKE"] = args.lake
    return cmd, env


def lake_only(args: argparse.Namespace, env: dict[str, str] | None = None) -> bool:
    """A lake named and no store: the dashboard shows the lake alone (no store, no server)."""
    env = dict(os.environ) if env is None else env
    return bool(getattr(args, "lake", None) or env.get("MEMSTORE_LAKE")) and not (args.store or env.get("MEMSTORE_PATH"))


def cmd_ui(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("streamlit") is None:
        print("error: the dashboard needs Streamlit — install it with: pip install 'memstore[app]'", file=sys.stderr)
        return 1
    server = None
    if not args.no_server and not lake_only(args):
        from memstore.dashboard.store import DEFAULT_DEMO_STORE, choose_store_path

        store = choose_store_path(args.store)
        if not os.path.exists(store) and Path(store) == DEFAULT_DEMO_STORE:
            from memstore.dashboard.demo_store import ensure_demo_store

            print(f"building the demo store {store} from data/demo …", file=sys.stderr)
            try:
                ensure_demo_store(store)
            except FileNotFoundError as exc:
                print(f"error: no store at {store}, and {exc}", file=sys.stderr)
                return 1
        if os.path.exists(store):
            args.store = store
            server = ensure_server(store)
    cmd, env = streamlit_command(args)
    print(f"dashboard on http://{args.host}:{args.port}  (Ctrl+C to stop)", file=sys.stderr)
    # SIGTERM (a service manager, a test) stops like Ctrl+C: Streamlit, then the server started here
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        return subprocess.call(cmd, env=env)
    finally:
        if server is not None:
            print("stopping the server this dashboard started", file=sys.stderr)
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def ensure_server(store: str, timeout_s: float = 120.0) -> subprocess.Popen | None:
    """Start `memstore serve` for `store` unless one runs; returns the process we started (or None)."""
    import time

    from memstore.wire.discovery import live_server

    info = live_server(store)
    if info is not None:
        print(f"using the memstore server at {info['url']} for {store}", file=sys.stderr)
        return None
    print(f"no server owns {store}: starting `memstore serve --store {store} --fronts 0` for this dashboard", file=sys.stderr)
    # one analyst's dashboard: one process (no front processes to start, and the dashboard's reads
    # are analyst calls that go to the owner anyway)
    proc = subprocess.Popen([sys.executable, "-m", "memstore.cli", "serve", "--store", store, "--fronts", "0"],
                            stdout=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"error: `memstore serve --store {store}` exited with {proc.returncode} (see above)")
        if live_server(store, timeout=1.0):
            return proc
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"error: the server for {store} did not start within {timeout_s:.0f} s")
