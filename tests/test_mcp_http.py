"""The streamable-HTTP MCP endpoint of a real `memstore serve` subprocess, driven by the SDK's real
client: `/mcp/{client}/{user_id}` and `/mcp?user_id=`, with cross-scope attempts refused."""
from __future__ import annotations

import asyncio

import httpx
import pytest

pytest.importorskip("mcp")

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memstore import Memory
from memstore.governance.doctor import assert_store_healthy
from memstore.integrations.mcp_server import result_json
from memstore.testing.server_process import ServerProcess


@pytest.fixture
def http_server(store_path):
    """A real `memstore serve` subprocess (it mounts the MCP endpoint) on a free 127.0.0.1 port."""
    with Memory(store_path) as m:
        bob_id = m.add("My locker code is 4411", user_id="bob", infer=False)["results"][0]["id"]
    srv = ServerProcess(store_path).start()
    try:
        yield srv, bob_id
    finally:
        srv.stop()


def _client(srv: ServerProcess, path: str, token: str | None = "") -> Client:
    headers = {"Authorization": f"Bearer {srv.token if token == '' else token}"} if token is not None else {}
    timeout = httpx2.Timeout(60.0, read=300.0)         # the SDK's own defaults for MCP over HTTP
    return Client(streamable_http_client(srv.url + path, http_client=httpx2.AsyncClient(headers=headers,
                                                                                          timeout=timeout)))


def test_http_round_trip_and_cross_scope_refusal(http_server, store_path):
    srv, bob_id = http_server

    async def session() -> dict:
        seen: dict = {}
        async with _client(srv, "/mcp/cursor/alice") as c:
            added = result_json(await c.call_tool("add_memory", {"text": "I work at Acme as a welder"}))
            mid = added["results"][0]["id"]
            seen["found"] = result_json(await c.call_tool("search_memories", {"query": "where does alice work"}))
            seen["updated"] = result_json(await c.call_tool("update_memory", {"memory_id": mid,
                                                                               "text": "Alice works at Initech"}))
            seen["history"] = result_json(await c.call_tool("memory_history", {"memory_id": mid}))
            seen["x_get"] = await c.call_tool("get_memory", {"memory_id": bob_id})
            seen["x_filter"] = await c.call_tool("get_memories", {"filters": {"user_id": "bob"}})
            seen["entities"] = result_json(await c.call_tool("list_entities", {}))
            seen["mid"] = mid
        async with _client(srv, "/mcp?user_id=bob") as c:   # the other layout: the user as a query parameter
            seen["bob"] = result_json(await c.call_tool("list_memories", {}))
            seen["bob_x"] = await c.call_tool("get_memory", {"memory_id": seen["mid"]})
        async with _client(srv, "/mcp/cursor/alice") as c:
            seen["deleted"] = result_json(await c.call_tool("delete_memory", {"memory_id": seen["mid"]}))
        return seen

    seen = asyncio.run(asyncio.wait_for(session(), 120))
    assert "Acme" in seen["found"]["results"][0]["memory"]
    assert seen["updated"]["memory"] == "Alice works at Initech"
    assert [e["event"] for e in seen["history"]["events"]] == ["ADD", "UPDATE"]
    assert seen["history"]["events"][0]["actor_id"] == "mcp:cursor"
    assert seen["x_get"].is_error and seen["x_filter"].is_error
    assert "4411" not in str(seen["x_get"].content) + str(seen["x_filter"].content)
    assert seen["entities"]["users"] == [{"id": "alice", "memories": 1}]
    assert [r["memory"] for r in seen["bob"]["results"]] == ["My locker code is 4411"]
    assert seen["bob_x"].is_error and "Initech" not in str(seen["bob_x"].content)
    assert seen["deleted"]["deleted"] is True
    srv.stop()
    with Memory(store_path) as m:   # the server has exited: bob's memory is untouched, the store healthy
        assert m.get(bob_id)["memory"] == "My locker code is 4411"
        assert m.get(seen["mid"]) is None
        assert_store_healthy(m)


def test_http_refuses_no_token_no_user_and_a_session_reused_for_another_user(http_server):
    srv, _ = http_server
    base = srv.url
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    plain = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    r = httpx.post(f"{base}/mcp/cli/alice", json=init, headers=plain)
    assert r.status_code == 401 and "token" in r.json()["message"]
    headers = {**plain, "authorization": f"Bearer {srv.token}"}
    r = httpx.post(f"{base}/mcp", json=init, headers=headers)
    assert r.status_code == 400 and "user" in r.json()["message"]
    r = httpx.post(f"{base}/mcp/cli/alice", json=init, headers=headers)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    r = httpx.post(f"{base}/mcp/cli/bob", headers={**headers, "mcp-session-id": sid},
                   json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert r.status_code == 403 and r.json()["error"] == "scope_mismatch"


def test_stdio_server_on_a_store_that_memstore_serve_owns_goes_through_the_server(http_server, store_path):
    """Claude Desktop's `memstore mcp --store PATH` while `memstore serve` owns PATH: the stdio server
    becomes a client of the HTTP server (one owner of the file), with the same tools and scope."""
    import os
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters

    srv, bob_id = http_server
    root = Path(__file__).resolve().parent.parent
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ, PYTHONPATH=str(root)),
                                   args=["-m", "memstore.cli", "mcp", "--store", store_path, "--user", "alice"])

    async def session() -> dict:
        async with Client(params) as c:
            added = result_json(await c.call_tool("add_memory", {"text": "I play the oboe"}))
            found = result_json(await c.call_tool("search_memories", {"query": "oboe"}))
            refused = await c.call_tool("get_memory", {"memory_id": bob_id})
        return {"added": added, "found": found, "refused": refused}

    seen = asyncio.run(asyncio.wait_for(session(), 120))
    assert "oboe" in seen["found"]["results"][0]["memory"] and seen["refused"].is_error
    client = srv.client()
    try:
        mid = seen["added"]["results"][0]["id"]
        assert client.get(mid)["user_id"] == "alice"           # written by the server process
        assert client.history(mid)[0]["actor_id"] == "mcp:stdio"
    finally:
        client.close()
