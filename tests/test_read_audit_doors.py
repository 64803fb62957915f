"""The audit of reads through every door: real `memstore serve` subprocesses (with and without
front processes), MCP over HTTP, LangGraph's store. A search and a get leave exactly their rows,
with the ids and scores the caller got and the name of the token that asked."""
from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from memstore import Memory
from memstore.api.http_client import MemoryClient
from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}, "audit": {"reads": "on", "flush_s": 0.2}}
FACTS = [("alice", "I fly to Zanzibar on Tuesday"), ("alice", "I keep three beehives on my roof"),
         ("bob", "I play the oboe in a quartet")]


def _seed(path) -> dict[str, str]:
    m = Memory(str(path), config=CONFIG, embedded=True)
    ids = {text: m.add(text, user_id=user, infer=False)["results"][0]["id"] for user, text in FACTS}
    m.close()
    return ids


def _rows(client, *methods: str) -> list[dict]:
    df = client.frame("reads")
    return [r for r in df.sort("ts").to_dicts() if r["method"] in methods]


def _same(row: dict, out: dict) -> bool:
    got = [(r["id"], round(r["score"], 9)) for r in out["results"]]
    return list(zip(row["result_ids"], [round(s, 9) for s in row["scores"]])) == got


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("audit-server") / "s.duckdb"
    ids = _seed(path)
    with ServerProcess(path, config=CONFIG, args=["--fronts", "0"]) as srv:
        yield srv, ids


def test_server_search_and_get_leave_their_rows_with_the_token_name(server):
    srv, ids = server
    admin = srv.client()
    phone = MemoryClient(srv.url, token=admin.create_token("alice-phone", user_id="alice")["token"])
    before = len(_rows(admin, "search", "get"))
    a = admin.search("when do I fly", user_id="alice")
    g = admin.get(ids["I play the oboe in a quartet"])
    s = phone.search("beehives")                        # the token's scope fills in alice
    rest = httpx.post(f"{srv.url}/search", json={"query": "oboe", "user_id": "bob"},
                      headers={"Authorization": f"Bearer {srv.token}"}).json()
    rows = _rows(admin, "search", "get")[before:]
    assert [(r["method"], r["token_name"], r["door"], r["user_id"]) for r in rows] == [
        ("search", "admin", "server", "alice"), ("get", "admin", "server", "bob"),
        ("search", "alice-phone", "server", "alice"), ("search", "admin", "server", "bob")]
    assert _same(rows[0], a) and _same(rows[2], s) and _same(rows[3], rest)
    assert rows[1]["result_ids"] == [g["id"]] and rows[0]["query"] == "when do I fly"
    audit = admin.server_info()["read_audit"]
    assert audit["recorded"] >= 4 and not audit.get("lost") and not audit.get("failed")
    by_token = admin.sql("SELECT token_name, count(*) AS n FROM reads WHERE method = 'search' GROUP BY 1 ORDER BY 1")
    assert dict(zip(by_token["token_name"], by_token["n"]))["alice-phone"] >= 1


def test_mcp_tools_leave_their_rows_under_door_mcp(server):
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memstore.integrations.mcp_server import result_json

    srv, ids = server
    admin = srv.client()
    before = len(_rows(admin, "search", "get"))

    async def session() -> tuple:
        headers = {"Authorization": f"Bearer {srv.token}"}
        client = Client(streamable_http_client(srv.url + "/mcp/cursor/alice",
                                               http_client=httpx2.AsyncClient(headers=headers, timeout=60)))
        async with client as c:
            found = result_json(await c.call_tool("search_memories", {"query": "beehives on the roof"}))
            got = result_json(await c.call_tool("get_memory", {"memory_id": ids["I fly to Zanzibar on Tuesday"]}))
        return found, got

    found, got = asyncio.run(asyncio.wait_for(session(), 120))
    rows = _rows(admin, "search", "get")[before:]
    assert [(r["method"], r["door"], r["token_name"], r["user_id"]) for r in rows] == [
        ("search", "mcp", "admin", "alice"), ("get", "mcp", "admin", "alice")]
    assert rows[0]["result_ids"] == [r["id"] for r in found["results"]] and rows[1]["result_ids"] == [got["id"]]


def test_fronts_record_the_searches_they_answer_from_their_copies(tmp_path):
    path = tmp_path / "f.duckdb"
    _seed(path)
    with ServerProcess(path, config=CONFIG, args=["--fronts", "1"]) as srv:
        admin = srv.client()
        outs = [admin.search("three beehives", user_id="alice") for _ in range(14)]
        copies = admin.server_info()["front_searches"].get("fresh", 0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:          # the front sends its rows every 0.5 s
            rows = _rows(admin, "search")
            if len(rows) >= len(outs):
                break
            time.sleep(0.2)
    assert copies >= 1                              # some were answered from the front's copy
    assert len(rows) == len(outs)
    assert all(r["door"] == "front" and r["token_name"] == "admin" and r["user_id"] == "alice" for r in rows)
    assert all(_same(r, o) for r, o in zip(rows, outs))


def test_langgraph_store_reads_are_recorded_and_its_puts_are_not(tmp_path):
    pytest.importorskip("langgraph")
    from memstore.integrations.langgraph import MemstoreStore

    m = Memory(str(tmp_path / "lg.duckdb"), config=CONFIG)
    store = MemstoreStore(m)
    ns = ("memories", "alice")
    store.put(ns, "home", {"content": "Alice lives in Boston"})
    store.put(ns, "pet", {"content": "Alice has a parrot called Kiwi"})
    hits = store.search(ns, query="parrot")
    item = store.get(ns, "home")
    rows = [r for r in m.frame("reads").sort("ts").to_dicts() if r["method"] != "frame"]
    assert [(r["method"], r["door"], r["user_id"]) for r in rows] == [("search", "langgraph", "alice"),
                                                                      ("get_all", "langgraph", "alice")]
    assert len(rows[0]["result_ids"]) == len(hits) and rows[1]["n_results"] == 1 and item is not None
    m.close()


def test_a_scoped_token_cannot_read_the_audit(server):
    from memstore.core.errors import TokenRightsError

    srv, _ = server
    admin = srv.client()
    bob = MemoryClient(srv.url, token=admin.create_token("bob-laptop", user_id="bob")["token"])
    with pytest.raises(TokenRightsError):
        bob.frame("reads")


def test_each_shard_of_a_cluster_records_its_part(tmp_path):
    from memstore.core.placement import shard_of_key
    from memstore.testing.cluster_process import ClusterProcess, haproxy_available

    if not haproxy_available():
        pytest.skip("haproxy is not installed (.ci/run installs it)")
    users = [f"user-{i}" for i in range(6)]
    with ClusterProcess(tmp_path / "c", shards=2, config=CONFIG) as c:
        m = c.client()
        got = {}
        for u in users:
            mid = m.add(f"{u} keeps a red kite", user_id=u, infer=False)["results"][0]["id"]
            got[u] = (m.search("red kite", user_id=u), m.get(mid, user_id=u))
        shards = [MemoryClient(s.url, token=c.token) for s in c.servers]
        rows = [_rows(s, "search", "get") for s in shards]
    for u in users:
        home = shard_of_key(u, 2)
        mine = [r for r in rows[home] if r["user_id"] == u]
        assert [r["method"] for r in mine] == ["search", "get"]
        assert _same(mine[0], got[u][0]) and mine[1]["result_ids"] == [got[u][1]["id"]]
        assert not [r for r in rows[1 - home] if r["user_id"] == u]
