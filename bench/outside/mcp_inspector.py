"""Drive the official MCP Inspector (CLI mode) against `memstore mcp` (stdio) and the `/mcp`
endpoint of `memstore serve` (streamable HTTP), with the same eight calls, and print one line per
call and transport: whether it was an error and what it did. The two columns must agree.

    npm install --prefix /tmp/insp @modelcontextprotocol/inspector@2.12.0
    python bench/outside/mcp_inspector.py --inspector /tmp/insp/node_modules/.bin/mcp-inspector

Exit status 0 when stdio and HTTP give the same eight results and every expectation holds
(an add that stores nothing says so, unknown arguments are refused, forget_me verifies).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
USER = "alice"

CALLS: list[tuple[str, list[str], str]] = [   # (label, inspector arguments, what must hold)
    ("tools/list", ["--method", "tools/list"], "15 tools"),
    ("add third person", ["--method", "tools/call", "--tool-name", "add_memory",
                          "--tool-arg", "text=Alice keeps three beehives on her roof"], "stored"),
    ("add schema example", ["--method", "tools/call", "--tool-name", "add_memory",
                            "--tool-arg", "text=Prefers window seats"], "stored"),
    ("add small talk", ["--method", "tools/call", "--tool-name", "add_memory", "--tool-arg", "text=hi there"],
     "nothing stored, said so"),
    ("search", ["--method", "tools/call", "--tool-name", "search_memories", "--tool-arg", "query=beehives"],
     "finds the beehives"),
    ("list_entities foo=bar", ["--method", "tools/call", "--tool-name", "list_entities", "--tool-arg", "foo=bar"],
     "refused"),
    ("list_memories foo=bar", ["--method", "tools/call", "--tool-name", "list_memories", "--tool-arg", "foo=bar"],
     "refused"),
    ("forget_me", ["--method", "tools/call", "--tool-name", "forget_me", "--tool-arg", "confirm=true"], "verified"),
]


def summarize(label: str, out: dict[str, Any]) -> str:
    """What a call did, in words that do not depend on ids or timings."""
    if label == "tools/list":
        return f"{len(out.get('tools', []))} tools"
    if out.get("isError"):
        text = " ".join(c.get("text", "") for c in out.get("content", []))
        if "NothingStoredError" in text:
            return "nothing stored, said so (isError)"
        if "does not take" in text or "unknown" in text.lower():
            return "refused: unknown argument"
        return "refused: " + text[:40]
    data = out.get("structuredContent") or {}
    if label.startswith("add"):
        events = [r.get("event") for r in data.get("results", [])]
        if events:
            return "stored: " + ",".join(events)
        return "nothing stored, said so" if data.get("message") or data.get("stored") == 0 else "nothing stored"
    if label == "search":
        return "finds the beehives" if any("beehive" in r.get("memory", "") for r in data.get("results", [])) \
            else "no beehives"
    if label == "forget_me":
        receipt = data.get("receipt", data)
        return "verified" if receipt.get("verified") else f"not verified: {json.dumps(data)[:80]}"
    return json.dumps(data)[:80]


def run(inspector: str, target: list[str], call: list[str]) -> dict[str, Any]:
    proc = subprocess.run([inspector, "--cli", *target, *call], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")})
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"isError": True, "content": [{"text": (proc.stdout + proc.stderr).strip()[-200:]}]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inspector", required=True, help="path to node_modules/.bin/mcp-inspector")
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary one)")
    args = ap.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="mcp-inspector-")
    config = {"embedder": {"provider": "hashing"}}
    stdio_store = os.path.join(work, "stdio.duckdb")
    from memstore import Memory
    from memstore.testing.server_process import ServerProcess

    Memory(stdio_store, config=config).close()          # created with the same embedder as the served store
    stdio = [sys.executable, "-m", "memstore.cli", "mcp", "--store", stdio_store, "--user", USER]
    results: dict[str, list[str]] = {"stdio": [], "http": []}
    for label, call, _ in CALLS:
        results["stdio"].append(summarize(label, run(args.inspector, stdio, call)))
    with ServerProcess(os.path.join(work, "served.duckdb"), config=config) as server:
        http = ["--transport", "http", "--server-url", f"{server.url}/mcp", "--header",
                f"Authorization: Bearer {server.token}", "--header", f"X-Memstore-User: {USER}"]
        for label, call, _ in CALLS:
            results["http"].append(summarize(label, run(args.inspector, http, call)))
    ok = True
    print(f"{'call':24} {'stdio':34} {'http':34} expected")
    for (label, _, expected), a, b in zip(CALLS, results["stdio"], results["http"]):
        good = a == b and a.startswith(expected)
        ok &= good
        print(f"{label:24} {a:34} {b:34} {expected}{'' if good else '   <-- differs'}")
    same = sum(a == b for a, b in zip(results["stdio"], results["http"]))
    print(f"same results on both transports: {same}/{len(CALLS)}; expectations met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
