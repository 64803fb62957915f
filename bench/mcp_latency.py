"""MCP tool-call latency over stdio (`memstore mcp` subprocess) and streamable HTTP (`memstore
serve` subprocess), with the SDK's real client, on a store of one user's memories.

    python bench/mcp_latency.py                      # 300 memories, 60 calls per tool and transport
    python bench/mcp_latency.py --memories 1000 --calls 200

Prints p50 / p95 per tool (search_memories, get_memory, add_memory) and transport, after warm-up
calls (the first call loads spaCy and the embedder), with the load average.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memstore import Memory  # noqa: E402
from memstore.integrations.mcp_server import result_json  # noqa: E402
from memstore.testing.server_process import ServerProcess  # noqa: E402

FACTS = ["likes {x}", "visited {x} last year", "works with {x}", "is learning about {x}", "bought a book on {x}"]
TOPICS = ["jazz", "Lisbon", "sourdough", "climbing", "Rust", "chess", "Kyoto", "gardening", "cycling", "opera"]


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


async def measure(client: Client, calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"search_memories": [], "get_memory": [], "add_memory": []}
    async with client as c:
        first = result_json(await c.call_tool("search_memories", {"query": "what does alice like"}))
        mid = first["results"][0]["id"]
        for _ in range(5):   # warm-up
            await c.call_tool("search_memories", {"query": "jazz"})
            await c.call_tool("get_memory", {"memory_id": mid})
        for i in range(calls):
            for tool, args in (("search_memories", {"query": f"what does alice know about {TOPICS[i % 10]}"}),
                               ("get_memory", {"memory_id": mid}),
                               ("add_memory", {"text": f"Alice noted item {i} on {TOPICS[i % 10]}"})):
                t0 = time.perf_counter()
                r = await c.call_tool(tool, args)
                times[tool].append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r.content
    return times


def report(name: str, times: dict[str, list[float]]) -> None:
    for tool, vals in times.items():
        print(f"{name:<6} {tool:<16} p50 {statistics.median(vals):7.1f} ms   p95 {pct(vals, 0.95):7.1f} ms   "
              f"(n={len(vals)})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mcp-bench-")
    store = os.path.join(tmp, "bench.duckdb")
    with Memory(store) as m:
        texts = [f"Alice {FACTS[i % 5].format(x=TOPICS[(i // 5) % 10])} ({i})" for i in range(args.memories)]
        for i in range(0, len(texts), 50):
            m.add([{"role": "user", "content": t} for t in texts[i:i + 50]], user_id="alice", infer=False)
    print(f"store: {args.memories} memories of alice; load average {os.getloadavg()}", flush=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    stdio = Client(StdioServerParameters(command=sys.executable, env=env,
                                         args=["-m", "memstore.cli", "mcp", "--store", store, "--user", "alice"]))
    report("stdio", asyncio.run(measure(stdio, args.calls)))
    print(f"load average {os.getloadavg()}", flush=True)
    with ServerProcess(store) as srv:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {srv.token}"},
                                  timeout=httpx2.Timeout(60.0, read=300.0))
        report("http", asyncio.run(measure(Client(streamable_http_client(srv.url + "/mcp/bench/alice",
                                                                             http_client=http)), args.calls)))
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
