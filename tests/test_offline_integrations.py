"""With the default config (offline extractor, local embedder), what an agent writes through the
MCP stdio server or a LangGraph store is stored and found (issue 31): third-person facts and
notes about the user, not only first-person sentences."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from memstore import Memory

ROOT = Path(__file__).resolve().parent.parent


def test_mcp_stdio_add_memory_keeps_third_person_facts_and_agent_notes(store_path):
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    from memstore.integrations.mcp_server import result_json

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                   args=["-m", "memstore.cli", "mcp", "--store", store_path, "--user", "dana",
                                         "--client", "pytest"])

    async def session() -> dict:
        seen: dict = {}
        async with Client(params) as c:
            for text in ("Bob is training for the Berlin marathon", "Prefers window seats",
                         "User's daughter starts school in May", "Thanks, that helps!"):
                seen[text] = result_json(await c.call_tool("add_memory", {"text": text}))
            for q in ("who is running a marathon", "seat preference on flights", "when does the daughter start school"):
                seen[q] = result_json(await c.call_tool("search_memories", {"query": q, "limit": 3}))
        return seen

    seen = asyncio.run(asyncio.wait_for(session(), 180))
    assert [r["memory"] for r in seen["Bob is training for the Berlin marathon"]["results"]] == \
        ["Bob is training for the Berlin marathon"]
    assert [r["memory"] for r in seen["Prefers window seats"]["results"]] == ["Dana prefers window seats"]
    assert [r["memory"] for r in seen["User's daughter starts school in May"]["results"]] == \
        ["Dana's daughter starts school in May"]
    # small talk stores nothing, and the MCP tool says so (issue 33: an add that stores nothing is an error)
    thanks = seen["Thanks, that helps!"]
    assert isinstance(thanks, str) and "nothing was stored" in thanks.lower(), thanks
    assert "marathon" in seen["who is running a marathon"]["results"][0]["memory"]
    assert "window seats" in seen["seat preference on flights"]["results"][0]["memory"]
    assert "school in May" in seen["when does the daughter start school"]["results"][0]["memory"]
    with Memory(store_path) as m:
        rows = m.get_all(user_id="dana")["results"]
        assert {r["attributed_to"] for r in rows} == {"Dana"}      # the user's own notes, by the agent


def test_langgraph_store_and_default_add_find_a_third_person_fact(store_path):
    pytest.importorskip("langgraph")
    from memstore.integrations.langgraph import MemstoreStore

    store = MemstoreStore(store_path)                    # a path: Memory with the default config
    ns = ("memories", "alice")
    store.put(ns, "bees", {"content": "Alice keeps three beehives on her roof"})
    hits = store.search(ns, query="how many beehives", limit=3)
    assert hits and hits[0].key == "bees"
    # a graph node that lets the extractor read an agent's note (infer=True, the default)
    out = store.memory.add("Bob is training for the Berlin marathon", user_id="alice")
    assert [r["memory"] for r in out["results"]] == ["Bob is training for the Berlin marathon"]
    found = store.memory.search("Berlin marathon training", user_id="alice")["results"]
    assert found[0]["memory"] == "Bob is training for the Berlin marathon"
    store.memory.close()
