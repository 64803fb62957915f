"""A load process for cluster tests and `bench/cluster.py`: one of three kinds of client hits a
balancer for a while and logs every acknowledged write and every error, one JSON line each
(flushed per line, so the log survives kills):

- `client`: the Python client (`memstore.connect(url)`, slot header), add then get of its own write;
- `rest`: raw mem0-shaped REST (`POST /memories` with user_id in the body, `GET /memories/{id}?user_id=`);
- `mcp`: the MCP SDK's streamable-HTTP client on `/mcp/<client>/<user>` (`add_memory`, `get_memory`).

    python -m memstore.testing.cluster_worker URL LOG --kind rest --users u1,u2 --seconds 8
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("log")
    ap.add_argument("--kind", choices=("client", "rest", "mcp"), required=True)
    ap.add_argument("--users", required=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--token", default=os.environ.get("MEMSTORE_TOKEN"))
    ap.add_argument("--ops", default="add,read", help="add,read (default) or add,search (bench)")
    ap.add_argument("--stop-file", default=None, help="stop early once this file exists")
    ap.add_argument("--retry-for", type=float, default=0.0,
                    help="the client's retry_for (default 0: a down shard's users fail at once, the test sees it)")
    a = ap.parse_args(argv)
    users = a.users.split(",")
    with open(a.log, "a", encoding="utf-8") as log:
        def emit(**rec: Any) -> None:
            rec.update(kind=a.kind, worker=a.worker, t=time.time())
            log.write(json.dumps(rec) + "\n")
            log.flush()

        run = {"client": _client, "rest": _rest, "mcp": _mcp}[a.kind]
        run(a, users, emit)
    return 0


def _running(a: argparse.Namespace, deadline: float) -> bool:
    return time.monotonic() < deadline and not (a.stop_file and os.path.exists(a.stop_file))


def _text(a: argparse.Namespace, n: int, user: str) -> str:
    return f"note {a.kind}-{a.worker}-{n} for {user}: item {random.randrange(10**9)}"


def _fact(rnd: random.Random) -> str:
    """A sentence the offline extractor turns into a fact (MCP's add_memory extracts)."""
    what = rnd.choice(("red apples", "blue pens", "old maps", "green tea", "spare tyres", "paper kites"))
    where = rnd.choice(("market", "harbour", "station", "bakery", "library"))
    return f"I bought {rnd.randrange(2, 10**6)} {what} at the {where} on day {rnd.randrange(1, 10**4)}"


def _client(a: argparse.Namespace, users: list[str], emit: Callable[..., None]) -> None:
    from memstore.api.connect import connect
    from memstore.core.errors import MemstoreError

    m = connect(a.url, token=a.token, retry_for=a.retry_for)
    rnd = random.Random(a.worker)
    deadline, n = time.monotonic() + a.seconds, 0
    while _running(a, deadline):
        user, n = rnd.choice(users), n + 1
        t0 = time.perf_counter()
        try:
            if "search" in a.ops and n % 2 == 0:
                m.search(f"item for {user}", user_id=user, top_k=5)
                emit(op="search", user=user, ms=(time.perf_counter() - t0) * 1000)
                continue
            out = m.add(_text(a, n, user), user_id=user, infer=False)
            ids = [r["id"] for r in out["results"] if r.get("event") == "ADD"]
            emit(op="ack", user=user, ids=ids, ms=(time.perf_counter() - t0) * 1000)
            if "read" in a.ops and ids:
                emit(op="read", user=user, ok=m.get(ids[0], user_id=user) is not None)
        except MemstoreError as exc:
            emit(op="error", user=user, type=type(exc).__name__, message=str(exc)[:300])
            time.sleep(0.05)


def _rest(a: argparse.Namespace, users: list[str], emit: Callable[..., None]) -> None:
    from urllib.parse import quote

    from memstore.wire.transport import Transport, TransportError

    t = Transport(a.url, headers={"Authorization": f"Bearer {a.token}", "Content-Type": "application/json"},
                  timeout=60)
    rnd = random.Random(1000 + a.worker)
    deadline, n = time.monotonic() + a.seconds, 0
    while _running(a, deadline):
        user, n = rnd.choice(users), n + 1
        body = {"messages": [{"role": "user", "content": _text(a, n, user)}], "user_id": user, "infer": False}
        try:
            status, _, content = t.request("POST", "/memories", json.dumps(body))
            if status != 200:
                emit(op="error", user=user, type=f"HTTP {status}", message=content[:300].decode("utf-8", "replace"))
                time.sleep(0.05)
                continue
            ids = [r["id"] for r in json.loads(content)["results"] if r.get("event") == "ADD"]
            emit(op="ack", user=user, ids=ids)
            if ids:
                status, _, content = t.request("GET", f"/memories/{ids[0]}?user_id={quote(user)}")
                emit(op="read", user=user, ok=status == 200, status=status,
                     **({} if status == 200 else {"message": content[:300].decode("utf-8", "replace")}))
        except TransportError as exc:
            emit(op="error", user=user, type="TransportError", message=str(exc)[:300])
            time.sleep(0.05)


def _mcp(a: argparse.Namespace, users: list[str], emit: Callable[..., None]) -> None:
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memstore.integrations.mcp_server import result_json

    rnd = random.Random(2000 + a.worker)

    async def run() -> None:
        deadline, n = time.monotonic() + a.seconds, 0
        while _running(a, deadline):
            user = rnd.choice(users)
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {a.token}"},
                                      timeout=httpx2.Timeout(60.0, read=120.0))
            try:
                async with Client(streamable_http_client(f"{a.url}/mcp/load/{user}", http_client=http)) as c:
                    for _ in range(5):
                        if not _running(a, deadline):
                            break
                        n += 1
                        res = await c.call_tool("add_memory", {"text": _fact(rnd)})
                        if res.is_error:
                            emit(op="error", user=user, type="ToolError", message=str(res.content)[:300])
                            continue
                        ids = [r["id"] for r in result_json(res)["results"] if r.get("event") == "ADD"]
                        emit(op="ack", user=user, ids=ids)
                        if ids:
                            got = await c.call_tool("get_memory", {"memory_id": ids[0]})
                            emit(op="read", user=user, ok=not got.is_error)
            except Exception as exc:
                emit(op="error", user=user, type=type(exc).__name__, message=str(exc)[:300])
                await asyncio.sleep(0.05)

    asyncio.run(run())


if __name__ == "__main__":
    raise SystemExit(main())
