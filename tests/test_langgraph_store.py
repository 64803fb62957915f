"""MemstoreStore as LangGraph's BaseStore: ops on a real store, a compiled graph that writes and
reads memories, and LangMem's memory tools on it."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from memstore import Memory
from memstore.governance.doctor import assert_store_healthy
from memstore.integrations.langgraph import MemstoreStore


@pytest.fixture
def store(memory):
    yield MemstoreStore(memory)
    assert_store_healthy(memory)


def test_put_get_overwrite_delete_and_history(store, memory):
    ns = ("memories", "alice")
    store.put(ns, "home", {"content": "Alice lives in Boston", "kind": "fact"})
    item = store.get(ns, "home")
    assert item.value == {"content": "Alice lives in Boston", "kind": "fact"}
    assert item.namespace == ns and item.key == "home" and item.created_at.tzinfo is not None
    store.put(ns, "home", {"content": "Alice lives in Denver", "kind": "fact"})
    assert store.get(ns, "home").value["content"] == "Alice lives in Denver"
    rows = memory.get_all(user_id="alice")["results"]
    assert [r["memory"] for r in rows] == ["Alice lives in Denver"]          # one memory, updated in place
    assert [e["event"] for e in memory.history(rows[0]["id"])] == ["ADD", "UPDATE"]
    assert store.get(ns, "nope") is None and store.get(("memories", "bob"), "home") is None
    store.delete(ns, "home")
    assert store.get(ns, "home") is None and memory.get_all(user_id="alice")["results"] == []


def test_search_is_hybrid_filtered_and_scoped(store):
    ns = ("memories", "alice")
    store.put(ns, "1", {"content": "Alice is vegetarian", "topic": "food", "stars": 5})
    store.put(ns, "2", {"content": "Alice plays the cello in an orchestra", "topic": "music", "stars": 3})
    store.put(ns, "3", {"content": "Alice likes spicy Thai curry", "topic": "food", "stars": 4})
    store.put(("memories", "bob"), "1", {"content": "Bob is vegetarian too", "topic": "food"})
    hits = store.search(ns, query="what food does alice eat", limit=3)
    assert hits[0].key in {"1", "3"} and all(h.namespace == ns for h in hits)
    assert all(0 < h.score <= 1 for h in hits) and hits[0].score >= hits[-1].score
    assert {h.key for h in store.search(ns, query="vegetarian", filter={"topic": "food"})} <= {"1", "3"}
    assert [h.key for h in store.search(ns, filter={"stars": {"$gte": 4}, "topic": "food"})] in (["3", "1"], ["1", "3"])
    assert [h.key for h in store.search(ns, query="cello", filter={"topic": {"$ne": "food"}})] == ["2"]
    assert len(store.search(ns, limit=1, offset=1)) == 1
    # a prefix that does not fix the user is an application-wide read of this store's LangGraph items
    wide = store.search(("memories",), query="vegetarian", limit=10)
    assert {h.namespace for h in wide} == {ns, ("memories", "bob")}
    assert {h.key for h in store.search(ns, query="vegetarian", limit=10)} <= {"1", "2", "3"}   # alice only


def test_index_false_ttl_same_text_and_list_namespaces(store, memory):
    ns = ("memories", "alice")
    store.put(ns, "secret", {"content": "Alice's locker code is 4411"}, index=False)
    assert store.get(ns, "secret") is not None
    assert all(h.key != "secret" for h in store.search(ns, query="locker code"))
    assert "secret" in {h.key for h in store.search(ns)}                   # still listed without a query
    store.put(ns, "a", {"content": "Alice drinks green tea"})
    store.put(ns, "b", {"content": "Alice drinks green tea"})               # same text, another key
    assert store.get(ns, "a").value == store.get(ns, "b").value == {"content": "Alice drinks green tea"}
    store.put(ns, "soon", {"content": "Alice's parking ticket expires"}, ttl=30)
    rec = next(r for r in memory.get_all(user_id="alice")["results"] if r["metadata"]["langgraph"]["key"] == "soon")
    left = dt.datetime.fromisoformat(rec["expiration_date"]) - dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    assert dt.timedelta(minutes=29) < left <= dt.timedelta(minutes=30)
    store.put(("memories", "alice", "work"), "x", {"content": "Alice works at Acme"})
    store.put(("notes", "bob"), "x", {"content": "Bob's note"})
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "alice", "work")]
    assert store.list_namespaces(prefix=("memories", "alice"), max_depth=2) == [("memories", "alice")]
    assert store.list_namespaces(suffix=("work",)) == [("memories", "alice", "work")]
    assert store.list_namespaces() == [("memories", "alice"), ("memories", "alice", "work"), ("notes", "bob")]
    assert asyncio.run(store.alist_namespaces(prefix=("notes", "*"))) == [("notes", "bob")]


def test_a_compiled_graph_writes_and_reads_memories(store_path):
    class State(TypedDict):
        message: str
        recalled: list[str]

    def remember(state: State, config, *, store: BaseStore) -> dict:
        user = config["configurable"]["user_id"]
        ns = ("memories", user)
        found = [i.value["content"] for i in store.search(ns, query=state["message"], limit=3)]
        if state["message"].startswith("remember:"):
            store.put(ns, str(uuid.uuid4()), {"content": state["message"].removeprefix("remember:").strip()})
        return {"recalled": found}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    lg_store = MemstoreStore(store_path)
    try:
        graph = builder.compile(store=lg_store)
        cfg = {"configurable": {"user_id": "alice"}}
        graph.invoke({"message": "remember: Alice's sister Maya lives in Lisbon", "recalled": []}, cfg)
        out = graph.invoke({"message": "where does Maya live", "recalled": []}, cfg)
        assert out["recalled"] and "Lisbon" in out["recalled"][0]
        other = graph.invoke({"message": "where does Maya live", "recalled": []}, {"configurable": {"user_id": "bob"}})
        assert other["recalled"] == []
        out = asyncio.run(graph.ainvoke({"message": "Maya Lisbon", "recalled": []}, cfg))
        assert "Lisbon" in out["recalled"][0]
    finally:
        lg_store.close()
    with Memory(store_path) as m:
        assert [r["memory"] for r in m.get_all(user_id="alice")["results"]] == ["Alice's sister Maya lives in Lisbon"]
        assert_store_healthy(m)


def test_langmem_tools_run_on_the_store(store, memory):
    langmem = pytest.importorskip("langmem")
    ns = ("memories", "{langgraph_user_id}")
    manage = langmem.create_manage_memory_tool(namespace=ns, store=store)
    search = langmem.create_search_memory_tool(namespace=ns, store=store)
    cfg = {"configurable": {"langgraph_user_id": "alice"}}
    out = manage.invoke({"content": "Alice prefers aisle seats on long flights", "action": "create"}, cfg)
    key = out.split()[-1]
    manage.invoke({"content": "Alice is allergic to peanuts", "action": "create"}, cfg)
    hits = json.loads(search.invoke({"query": "which seat does alice like"}, cfg))
    assert hits[0]["key"] == key and hits[0]["value"]["content"] == "Alice prefers aisle seats on long flights"
    manage.invoke({"content": "Alice prefers window seats now", "action": "update", "id": key}, cfg)
    assert store.get(("memories", "alice"), key).value["content"] == "Alice prefers window seats now"
    manage.invoke({"action": "delete", "id": key}, cfg)
    assert store.get(("memories", "alice"), key) is None
    bob = json.loads(search.invoke({"query": "peanuts"}, {"configurable": {"langgraph_user_id": "bob"}}))
    assert bob == []


def test_the_store_works_against_a_memstore_server(tmp_path, monkeypatch):
    from memstore.testing.server_process import ServerProcess

    with ServerProcess(tmp_path / "srv.duckdb", config={"embedder": {"provider": "hashing"}}) as srv:
        monkeypatch.setenv("MEMSTORE_TOKEN", srv.token)
        store = MemstoreStore(srv.url)                 # a URL: the HTTP client, same methods
        assert type(store.memory).__name__ == "MemoryClient"
        ns = ("memories", "alice")
        store.put(ns, "diet", {"content": "Alice is vegetarian", "topic": "food"})
        store.put(ns, "diet", {"content": "Alice is vegan now", "topic": "food"})
        store.put(("memories", "bob"), "x", {"content": "Bob plays chess"}, ttl=60)
        assert store.get(ns, "diet").value == {"content": "Alice is vegan now", "topic": "food"}
        assert [h.key for h in store.search(ns, query="vegan", filter={"topic": "food"})] == ["diet"]
        assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]
        store.delete(ns, "diet")
        assert store.get(ns, "diet") is None
        store.close()


def test_ttl_refresh_on_read_extends_the_expiry(store, memory):
    ns = ("memories", "alice")
    store.put(ns, "t", {"content": "Alice's parking permit"}, ttl=10)
    rec = memory.get_all(user_id="alice")["results"][0]
    soon = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(minutes=2)
    memory.update(rec["id"], expiration_date=soon)                # as if 8 of its 10 minutes had passed
    store.get(ns, "t", refresh_ttl=False)
    assert memory.get(rec["id"])["expiration_date"] == soon.isoformat()
    store.get(ns, "t")                                             # a read refreshes it to 10 minutes again
    left = dt.datetime.fromisoformat(memory.get(rec["id"])["expiration_date"]) - soon
    assert dt.timedelta(minutes=7.9) < left < dt.timedelta(minutes=8.5)
    n = len(memory.history(rec["id"]))
    store.get(ns, "t")                                             # fresh enough: no write
    assert len(memory.history(rec["id"])) == n
