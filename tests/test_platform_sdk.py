"""mem0's platform SDK from PyPI (`mem0ai`: MemoryClient and AsyncMemoryClient), unchanged, against a
real `memstore serve`: only `host` differs. Every method either works, with its answer checked
(what was added is found, updated, deleted), or is refused as not supported (the SDK raises its
MemoryError with memstore's message, never a 404 page or a 500). A token scoped to one user, used
as the SDK's api_key, sees and changes only that user."""
from __future__ import annotations

import asyncio
import os
import tempfile

import pytest

os.environ.setdefault("MEM0_TELEMETRY", "false")             # the SDK sends no telemetry from tests
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-dir-"))
mem0 = pytest.importorskip("mem0")

from mem0 import AsyncMemoryClient, MemoryClient
from mem0.client.types import AddMemoryOptions, SearchMemoryOptions
from mem0.exceptions import AuthenticationError, MemoryNotFoundError
from mem0.exceptions import MemoryError as Mem0Error

from memstore.testing.server_process import ServerProcess

HASHING = {"embedder": {"provider": "hashing"}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("platform") / "s.duckdb", config=HASHING) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    return MemoryClient(api_key=server.token, host=server.url)


def _ids(answer):
    return [m["id"] for m in answer["results"]]


def test_init_pings_and_a_wrong_key_is_refused(server, client):
    assert (client.org_id, client.project_id) == ("memstore", "default")
    with pytest.raises(ValueError, match="wrong bearer token"):
        MemoryClient(api_key="not-a-token", host=server.url)


def test_add_get_search_update_history_delete(server, client):
    u = "py-ana"
    first = client.add([{"role": "user", "content": "I am a vegetarian and I live in Lisbon"}], user_id=u,
                       metadata={"topic": "food", "rating": 4}, infer=False)
    assert [r["event"] for r in first["results"]] == ["ADD"]
    mid = first["results"][0]["id"]
    second = client.add("I play the cello on Sundays", options=AddMemoryOptions(
        filters={"user_id": u}, metadata={"topic": "music", "rating": 9}, infer=False))        # identity as filters
    cello = second["results"][0]["id"]
    third = client.add({"role": "user", "content": "I fly to Tokyo in May"}, user_id=u, run_id="trip",
                       app_id="travel-app", timestamp=1_700_000_000, infer=False)
    tokyo = third["results"][0]["id"]

    got = client.get(mid)
    assert (got["memory"], got["user_id"], got["metadata"]) == ("I am a vegetarian and I live in Lisbon", u,
                                                                {"topic": "food", "rating": 4})
    assert client.get(tokyo)["app_id"] == "travel-app" and client.get(tokyo)["run_id"] == "trip"

    found = client.search("what does she eat?", filters={"user_id": u, "topic": "food"})
    assert _ids(found) == [mid] and 0 <= found["results"][0]["score"] <= 1
    assert _ids(client.search("cello", options=SearchMemoryOptions(filters={"AND": [{"user_id": u}]}, top_k=1))) == [cello]
    assert _ids(client.search("anything", filters={"user_id": u}, metadata={"topic": "music"})) == [cello]

    updated = client.update(mid, text="I am a vegan and I live in Lisbon", metadata={"topic": "food", "rating": 5})
    assert updated["memory"] == "I am a vegan and I live in Lisbon"
    assert client.get(mid)["metadata"] == {"topic": "food", "rating": 5}
    hist = client.history(mid)
    assert [h["event"] for h in hist] == ["ADD", "UPDATE"]
    assert (hist[1]["old_memory"], hist[1]["new_memory"]) == ("I am a vegetarian and I live in Lisbon",
                                                              "I am a vegan and I live in Lisbon")

    assert client.delete(cello)["message"]
    with pytest.raises(MemoryNotFoundError):
        client.get(cello)
    assert sorted(_ids(client.get_all(filters={"user_id": u}))) == sorted([mid, tokyo])


def test_platform_filter_language_and_paging(client):
    u = "py-filters"
    ids = {}
    for text, meta, run in (("Alpha likes tea", {"n": 1, "tag": "drink"}, None),
                            ("Beta likes coffee", {"n": 5, "tag": "drink"}, "r1"),
                            ("Gamma likes hiking", {"n": 9, "tag": "sport"}, "r2")):
        ids[text.split()[0]] = client.add(text, user_id=u, run_id=run, metadata=meta, infer=False)["results"][0]["id"]

    def got(filters, **kw):
        return sorted(m["memory"].split()[0] for m in client.get_all(filters=filters, **kw)["results"])

    assert got({"AND": [{"user_id": u}]}) == ["Alpha", "Beta", "Gamma"]
    assert got({"AND": [{"user_id": u}, {"run_id": "*"}]}) == ["Beta", "Gamma"]                 # wildcard
    assert got({"AND": [{"user_id": u}, {"run_id": {"in": ["r2", "r9"]}}]}) == ["Gamma"]
    assert got({"AND": [{"user_id": u}, {"metadata": {"n": {"gte": 5}}}]}) == ["Beta", "Gamma"]
    assert got({"AND": [{"user_id": u}, {"n": {"lte": 5}}, {"n": {"gte": 2}}]}) == ["Beta"]
    assert got({"user_id": u, "OR": [{"tag": "sport"}, {"keywords": {"contains": "tea"}}]}) == ["Alpha", "Gamma"]
    assert got({"AND": [{"user_id": u}, {"keywords": {"icontains": "COFFEE"}}]}) == ["Beta"]
    assert got({"AND": [{"user_id": u}, {"NOT": {"tag": "drink"}}]}) == ["Gamma"]
    assert got({"AND": [{"user_id": u}, {"memory_ids": [ids["Alpha"], ids["Gamma"]]}]}) == ["Alpha", "Gamma"]
    assert got({"AND": [{"user_id": u}, {"created_at": {"gte": "2000-01-01T00:00:00Z"}}]}) == ["Alpha", "Beta", "Gamma"]
    assert got({"AND": [{"user_id": u}, {"created_at": {"lt": "2000-01-01"}}]}) == []
    search = client.search("likes", filters={"AND": [{"user_id": u}, {"tag": {"in": ["sport"]}}]})
    assert [m["memory"] for m in search["results"]] == ["Gamma likes hiking"]

    pages = [client.get_all(filters={"user_id": u}, page=p, page_size=2) for p in (1, 2)]
    assert [p["count"] for p in pages] == [3, 3]
    assert [len(p["results"]) for p in pages] == [2, 1]
    assert pages[0]["next"] and pages[0]["previous"] is None and pages[1]["next"] is None
    assert len({m["id"] for p in pages for m in p["results"]}) == 3

    with pytest.raises(AuthenticationError, match="needs user_id"):       # no scope: refused (403), not all users
        client.get_all(filters={"OR": [{"user_id": u}, {"user_id": "someone-else"}]})


def test_batches_delete_all_entities_and_reset(server):
    c = MemoryClient(api_key=server.token, host=server.url)
    u = "py-batch"
    a, b = (c.add(t, user_id=u, infer=False)["results"][0]["id"] for t in ("I own a red bike", "I own a blue car"))
    assert "2" in c.batch_update([{"memory_id": a, "text": "I own a green bike"}, {"memory_id": b, "text": "I own a car"}])[
        "message"]
    assert (c.get(a)["memory"], c.get(b)["memory"]) == ("I own a green bike", "I own a car")
    with pytest.raises(MemoryNotFoundError):          # one unknown id: nothing of the batch changes
        c.batch_update([{"memory_id": a, "text": "changed"}, {"memory_id": "00000000-0000-0000-0000-000000000000",
                                                              "text": "x"}])
    assert c.get(a)["memory"] == "I own a green bike"
    c.batch_delete([{"memory_id": a}])
    with pytest.raises(MemoryNotFoundError):
        c.get(a)

    users = c.users()
    assert {"type": "user", "name": u, "total_memories": 1}.items() <= next(
        e for e in users["results"] if e["name"] == u).items()
    c.add("Agent note: prefers short answers", agent_id="py-agent", infer=False)
    assert any(e["type"] == "agent" and e["name"] == "py-agent" for e in c.users()["results"])
    assert c.delete_users(agent_id="py-agent")["message"]
    assert not any(e["name"] == "py-agent" for e in c.users()["results"])

    c.add("Temporary", user_id="py-temp", infer=False)
    assert c.delete_all(user_id="py-temp")["message"]
    assert c.get_all(filters={"user_id": "py-temp"})["count"] == 0
    assert c.get_all(filters={"user_id": u})["count"] == 1                     # others untouched

    c.reset()                                          # every user, agent and run: all deleted
    assert c.users()["results"] == []


def test_async_mode_add_is_not_lost(client):
    out = client.add("I moved to Oslo", user_id="py-async", async_mode=True, infer=False)
    assert out["status"] == "SUCCEEDED" and out["event_id"]
    assert [m["memory"] for m in client.get_all(filters={"user_id": "py-async"})["results"]] == ["I moved to Oslo"]
    inferred = client.add([{"role": "user", "content": "My sister Maria lives in Madrid."}], user_id="py-async")
    assert inferred["results"], inferred                                     # extraction stored something
    assert client.get_all(filters={"user_id": "py-async"})["count"] == 1 + len(inferred["results"])


NOT_SUPPORTED = {
    "create_memory_export": lambda c: c.create_memory_export("{}", user_id="x"),
    "get_memory_export": lambda c: c.get_memory_export(user_id="x"),
    "get_summary": lambda c: c.get_summary(filters={"user_id": "x"}),
    "feedback": lambda c: c.feedback("m1", "POSITIVE"),
    "get_webhooks": lambda c: c.get_webhooks("default"),
    "create_webhook": lambda c: c.create_webhook("http://127.0.0.1/h", "h", "default", ["memory_add"]),
    "update_webhook": lambda c: c.update_webhook(1, name="h"),
    "delete_webhook": lambda c: c.delete_webhook(1),
    "get_project": lambda c: c.get_project(),
    "update_project": lambda c: c.update_project(custom_instructions="x"),
    "project.get": lambda c: c.project.get(),
    "project.create": lambda c: c.project.create("p"),
    "project.update": lambda c: c.project.update(custom_instructions="x"),
    "project.delete": lambda c: c.project.delete(),
    "project.get_members": lambda c: c.project.get_members(),
    "project.add_member": lambda c: c.project.add_member("a@b.c"),
    "project.update_member": lambda c: c.project.update_member("a@b.c", "READER"),
    "project.remove_member": lambda c: c.project.remove_member("a@b.c"),
    "get_profile": lambda c: c.get_profile("x"),
    "generate_profile": lambda c: c.generate_profile("x"),
    "get_profile_settings": lambda c: c.get_profile_settings(),
    "update_profile_settings": lambda c: c.update_profile_settings(enabled=True),
    "sample_profiles": lambda c: c.sample_profiles(limit=1),
    "get_profile_job": lambda c: c.get_profile_job("job-1"),
    "add(custom_categories=...)": lambda c: c.add("x", user_id="x", custom_categories=[{"a": "b"}]),
    "add(custom_instructions=...)": lambda c: c.add("x", user_id="x", custom_instructions="be brief"),
    "update(timestamp=...)": lambda c: c.update("m1", timestamp=1),
    "delete(delete_linked=True)": lambda c: c.delete("m1", delete_linked=True),
}


@pytest.mark.parametrize("method", sorted(NOT_SUPPORTED))
def test_platform_only_features_are_refused_clearly(client, method):
    with pytest.raises(Mem0Error) as err:
        NOT_SUPPORTED[method](client)
    assert err.value.error_code == "HTTP_501", (method, err.value.error_code, err.value.message)
    assert "not support" in err.value.message and "memstore" in err.value.message
    assert err.value.details["error"]["type"] == "NotSupportedError"
    assert client.get_all(filters={"user_id": "x"})["count"] == 0                # the refused add stored nothing


def test_async_client_same_scenario(server):
    async def scenario():
        async with AsyncMemoryClient(api_key=server.token, host=server.url) as c:
            out = await c.add("I collect vinyl records", user_id="py-async-client", metadata={"k": "v"}, infer=False)
            mid = out["results"][0]["id"]
            assert (await c.get(mid))["memory"] == "I collect vinyl records"
            assert _ids(await c.search("vinyl", filters={"user_id": "py-async-client"})) == [mid]
            assert _ids(await c.get_all(filters={"AND": [{"user_id": "py-async-client"}, {"k": "v"}]})) == [mid]
            await c.update(mid, text="I collect jazz records")
            assert [h["event"] for h in await c.history(mid)] == ["ADD", "UPDATE"]
            await c.batch_update([{"memory_id": mid, "text": "I collect old records"}])
            assert (await c.get(mid))["memory"] == "I collect old records"
            assert any(e["name"] == "py-async-client" for e in (await c.users())["results"])
            with pytest.raises(Mem0Error, match="not support"):
                await c.get_summary()
            second = (await c.add("I also collect stamps", user_id="py-async-client", infer=False))["results"][0]["id"]
            await c.batch_delete([{"memory_id": second}])
            await c.delete(mid)
            with pytest.raises(MemoryNotFoundError):
                await c.get(mid)
            await c.add("Gone soon", user_id="py-async-client", infer=False)
            await c.delete_all(user_id="py-async-client")
            assert (await c.get_all(filters={"user_id": "py-async-client"}))["count"] == 0
            await c.add("Entity to drop", user_id="py-async-drop", infer=False)
            await c.delete_users(user_id="py-async-drop")
            assert (await c.get_all(filters={"user_id": "py-async-drop"}))["count"] == 0
    asyncio.run(scenario())


def test_a_scoped_token_through_the_sdk_sees_only_its_user(server):
    admin = server.client()
    bob_id = admin.add("Bob keeps bees", user_id="py-bob", infer=False)["results"][0]["id"]
    token = admin.create_token("py-alice-phone", user_id="py-alice")["token"]
    ro = admin.create_token("py-alice-ro", user_id="py-alice", read_only=True)["token"]
    alice = MemoryClient(api_key=token, host=server.url)

    mine = alice.add("Alice grows tomatoes", infer=False)["results"][0]["id"]          # no user: the token's
    assert admin.get(mine)["user_id"] == "py-alice"
    assert _ids(alice.get_all()) == [mine]                                            # no filters: its scope
    assert _ids(alice.search("tomatoes")) == [mine]
    assert _ids(alice.get_all(filters={"AND": [{"user_id": "py-alice"}]})) == [mine]
    with pytest.raises(MemoryNotFoundError):
        alice.get(bob_id)
    with pytest.raises(MemoryNotFoundError):
        alice.search("bees", filters={"user_id": "py-bob"})
    with pytest.raises(MemoryNotFoundError):
        alice.get_all(filters={"OR": [{"user_id": "py-alice"}, {"user_id": "py-bob"}]})
    with pytest.raises(MemoryNotFoundError):
        alice.add("sneaky", user_id="py-bob", infer=False)
    for call in (lambda: alice.update(bob_id, text="hacked"), lambda: alice.delete(bob_id),
                 lambda: alice.history(bob_id), lambda: alice.batch_delete([{"memory_id": bob_id}])):
        with pytest.raises(MemoryNotFoundError):
            call()
    with pytest.raises(MemoryNotFoundError):
        alice.delete_all(user_id="py-bob")
    assert admin.get(bob_id)["memory"] == "Bob keeps bees"                           # untouched
    assert [e["name"] for e in alice.users()["results"]] == ["py-alice"]
    with pytest.raises(MemoryNotFoundError):
        alice.delete_users(user_id="py-bob")
    assert admin.get(bob_id)["memory"] == "Bob keeps bees"

    reader = MemoryClient(api_key=ro, host=server.url)
    assert _ids(reader.get_all()) == [mine]
    with pytest.raises(AuthenticationError, match="read-only"):
        reader.add("not allowed", infer=False)
    admin.revoke_token("py-alice-phone")
    with pytest.raises(AuthenticationError):
        alice.get_all()
