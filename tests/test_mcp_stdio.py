"""`memstore mcp` over stdio, driven by the MCP SDK's real client against a real subprocess."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from memstore import Memory
from memstore.governance.doctor import assert_store_healthy
from memstore.integrations.mcp_server import result_json

ROOT = Path(__file__).resolve().parent.parent


def _server(store: str, user: str) -> StdioServerParameters:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return StdioServerParameters(command=sys.executable, args=["-m", "memstore.cli", "mcp", "--store", store,
                                                               "--user", user, "--client", "pytest"], env=env)


def test_stdio_round_trip_and_cross_scope_refusal(store_path):
    with Memory(store_path) as m:   # bob's memory exists before alice's server starts
        bob_id = m.add("My locker code is 4411", user_id="bob", infer=False)["results"][0]["id"]

    async def session() -> dict:
        seen: dict = {}
        async with Client(_server(store_path, "alice")) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            seen["names"] = names
            added = result_json(await c.call_tool("add_memory", {"text": "I live in Lisbon and I love fado"}))
            seen["added"] = added
            found = result_json(await c.call_tool("search_memories", {"query": "where does alice live", "limit": 5}))
            seen["found"] = found
            mid = next(r["id"] for r in added["results"] if "Lisbon" in r["memory"])
            seen["updated"] = result_json(await c.call_tool("update_memory", {"memory_id": mid,
                                                                               "text": "Alice lives in Porto"}))
            seen["history"] = result_json(await c.call_tool("memory_history", {"memory_id": mid}))
            seen["alias"] = result_json(await c.call_tool("search_memory", {"query": "Porto"}))
            # cross-scope attempts: each must fail and reveal nothing
            seen["x_get"] = await c.call_tool("get_memory", {"memory_id": bob_id})
            seen["x_update"] = await c.call_tool("update_memory", {"memory_id": bob_id, "text": "hacked"})
            seen["x_delete"] = await c.call_tool("delete_memories", {"memory_ids": [bob_id]})
            seen["x_filter"] = await c.call_tool("search_memories", {"query": "locker",
                                                                     "filters": {"OR": [{"user_id": "bob"}]}})
            seen["x_wipe"] = await c.call_tool("delete_all_memories", {"user_id": "bob"})
            seen["x_forget"] = await c.call_tool("forget_me", {})
            seen["own_search"] = result_json(await c.call_tool("search_memories", {"query": "locker code 4411"}))
            seen["deleted"] = result_json(await c.call_tool("delete_memory", {"memory_id": mid}))
            seen["after"] = result_json(await c.call_tool("get_memories", {}))
            seen["mid"] = mid
        return seen

    seen = asyncio.run(asyncio.wait_for(session(), 120))
    assert {"add_memory", "search_memories", "get_memories", "get_memory", "update_memory", "delete_memory",
            "delete_all_memories", "list_entities", "add_memories", "search_memory", "list_memories",
            "delete_memories", "memory_history", "what_changed", "forget_me"} <= seen["names"]
    assert any("Lisbon" in r["memory"] for r in seen["added"]["results"])
    assert "Lisbon" in seen["found"]["results"][0]["memory"] and 0 < seen["found"]["results"][0]["score"] <= 1
    assert set(seen["found"]["results"][0]) <= {"id", "memory", "score", "created_at", "updated_at", "metadata"}
    assert seen["updated"]["memory"] == "Alice lives in Porto" and "Lisbon" in seen["updated"]["previous_memory"]
    events = [e["event"] for e in seen["history"]["events"]]
    assert events == ["ADD", "UPDATE"] and seen["history"]["events"][1]["actor_id"] == "mcp:pytest"
    assert seen["alias"]["results"][0]["memory"] == "Alice lives in Porto"
    for key in ("x_get", "x_update", "x_delete", "x_filter", "x_wipe", "x_forget"):
        assert seen[key].is_error, key
        assert "4411" not in str(seen[key].content), key
    assert "another scope" in seen["x_wipe"].content[0].text and "confirm" in seen["x_forget"].content[0].text
    assert all("4411" not in r["memory"] for r in seen["own_search"]["results"])
    assert seen["deleted"] == {"id": seen["mid"], "deleted": True}
    assert all(r["id"] != seen["mid"] for r in seen["after"]["results"])

    with Memory(store_path) as m:   # the server has exited: bob's memory is untouched, the store healthy
        assert m.get(bob_id)["memory"] == "My locker code is 4411"
        assert m.get(seen["mid"]) is None
        assert_store_healthy(m)
