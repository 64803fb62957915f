"""The MCP tools through the SDK's in-memory client (the real protocol, no subprocess): what each
returns, the aliases, paging, what_changed, forget_me, and scope enforcement on every identity path."""
from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")

from mcp import Client

from memstore.governance.doctor import assert_store_healthy
from memstore.integrations.mcp_server import DESCRIPTIONS, build_server, result_json
from memstore.integrations.scoped_tools import ScopedTools, ScopeViolation


def _run(memory, scope, calls):
    async def go():
        out = []
        async with Client(build_server(memory, scope, actor_id="mcp:test")) as c:
            for name, args in calls:
                r = await c.call_tool(name, args)
                out.append((r.is_error, r.content[0].text if r.is_error else result_json(r)))
        return out
    return asyncio.run(go())


def test_every_tool_has_a_model_facing_description(memory):
    async def go():
        async with Client(build_server(memory, {"user_id": "alice"})) as c:
            return (await c.list_tools()).tools
    tools = asyncio.run(go())
    assert {t.name for t in tools} == set(DESCRIPTIONS)
    for t in tools:
        assert len(t.description) > 40, t.name
        for prop in t.input_schema.get("properties", {}).values():
            assert prop.get("description"), (t.name, prop)


def test_what_changed_history_paging_and_aliases(memory):
    memory.add("I live in Boston", user_id="alice", timestamp="2023-03-01")
    memory.add("I moved to Seattle", user_id="alice", timestamp="2023-05-01")
    for i in range(5):
        memory.add(f"Alice owns book number {i}", user_id="alice", infer=False)
    res = _run(memory, {"user_id": "alice"}, [
        ("what_changed", {}),
        ("what_changed", {"subject": "nobody"}),
        ("get_memories", {"page": 1, "page_size": 4}),
        ("get_memories", {"page": 2, "page_size": 4}),
        ("list_memories", {}),
        ("add_memories", {"text": "I am allergic to peanuts"}),
        ("search_memory", {"query": "peanut allergy"}),
        ("list_entities", {}),
    ])
    assert not any(err for err, _ in res), res
    changed = res[0][1]["changes"]
    assert changed[0]["was"] == "Alice lives in Boston" and changed[0]["now"] == "Alice moved to Seattle"
    assert changed[0]["slot"] == "lives_in" and res[1][1] == {"changes": []}
    p1, p2 = res[2][1], res[3][1]
    assert len(p1["results"]) == 4 and p1["has_more"] and len(p2["results"]) == 2 and not p2["has_more"]
    assert not {r["id"] for r in p1["results"]} & {r["id"] for r in p2["results"]}
    assert len(res[4][1]["results"]) == 6                       # current memories only: Boston is superseded
    assert "peanuts" in res[6][1]["results"][0]["memory"]
    assert res[7][1]["users"] == [{"id": "alice", "memories": 7}]


def test_forget_me_needs_confirmation_and_returns_the_receipt(memory):
    memory.add("My passport number is X123", user_id="alice", infer=False)
    memory.add("Bob's cat is Felix", user_id="bob", infer=False)
    res = _run(memory, {"user_id": "alice"}, [("forget_me", {}), ("forget_me", {"confirm": True}),
                                             ("get_memories", {})])
    assert res[0][0] and "confirm" in res[0][1]
    assert res[1][1]["erased"] and res[1][1]["verified"] is True and res[1][1]["memories_removed"] == 1
    assert res[2][1]["results"] == []
    assert [r["memory"] for r in memory.get_all(user_id="bob")["results"]] == ["Bob's cat is Felix"]
    assert memory.erasure_receipts(user_id="alice")[0]["id"] == res[1][1]["receipt_id"]
    assert_store_healthy(memory)


def test_scope_is_never_widened_or_moved(memory):
    bob = memory.add("Bob's PIN is 9999", user_id="bob", infer=False)["results"][0]["id"]
    tools = ScopedTools(memory, {"user_id": "alice"})
    for call in (lambda: tools.identity(user_id="bob"),
                 lambda: tools.filters({"NOT": {"user_id": "bob"}}),
                 lambda: tools.filters({"AND": [{"user_id": {"in": ["alice", "bob"]}}]}),
                 lambda: tools.get_memory(bob), lambda: tools.memory_history(bob),
                 lambda: tools.delete_memories(["nope", bob]),
                 lambda: tools.update_memory(bob, "x")):
        with pytest.raises(ScopeViolation):
            call()
    assert tools.identity(agent_id="travel") == {"user_id": "alice", "agent_id": "travel"}   # narrowing is fine
    assert tools.filters({"topic": "x"}) == {"user_id": "alice", "AND": [{"topic": "x"}]}
    mid = tools.add_memory("Alice likes tea", agent_id="travel", infer=False)["results"][0]["id"]
    assert memory.get(mid)["agent_id"] == "travel" and memory.get(mid)["user_id"] == "alice"
    assert tools.delete_all_memories()["deleted"] == 1 and memory.get(bob) is not None
    with pytest.raises(ScopeViolation, match="needs user_id"):
        ScopedTools(memory, {})
