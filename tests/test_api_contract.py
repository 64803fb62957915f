"""One behavioural suite, two implementations: the embedded Memory and the HTTP client of a real
`memstore serve` subprocess must behave the same (same results, same shapes, same errors)."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid

import polars as pl
import pytest

from memstore import AsyncMemory, Memory, MemoryAPI
from memstore.api.http_client import MemoryClient
from memstore.api.protocol import METHODS
from memstore.core.errors import FilterError, IdentityError, NotFoundError
from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}}
DEMO_JSONL = "data/demo/jsonl/erin/messages.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("srv") / "contract.duckdb", config=CONFIG) as srv:
        yield srv


@pytest.fixture(params=["embedded", "client"])
def api(request, tmp_path):
    if request.param == "embedded":
        m = Memory(str(tmp_path / "embedded.duckdb"), config=CONFIG)
    else:
        m = request.getfixturevalue("server").client()
    yield m
    m.close()


@pytest.fixture
def user():
    return f"u-{uuid.uuid4().hex[:10]}"


def _strip(results):
    """Results without what differs by nature between two stores (ids, times, scores)."""
    drop = {"id", "created_at", "updated_at", "valid_from", "invalidated_at", "superseded_by", "source_message_ids",
            "score", "hash"}
    return sorted(tuple(sorted((k, json.dumps(v, default=str)) for k, v in r.items() if k not in drop))
                   for r in results)


def test_both_implement_the_one_interface(server):
    client = server.client()
    assert isinstance(client, MemoryAPI)
    for name in METHODS:
        assert callable(getattr(Memory, name)), name
        assert callable(getattr(MemoryClient, name)), name
    client.close()


def test_add_get_search_round_trip(api, user):
    out = api.add("I'm vegetarian and I live in Boston", user_id=user)
    assert sorted(r["memory"] for r in out["results"]) == [f"{user.capitalize()} is vegetarian",
                                                           f"{user.capitalize()} lives in Boston"] or \
        len(out["results"]) == 2
    assert set(out) >= {"results", "extraction"} and out["extraction"]["status"] in ("ok", "empty", "raw")
    first = out["results"][0]
    rec = api.get(first["id"])
    assert rec["memory"] == first["memory"] and rec["user_id"] == user and rec["status"] == "current"
    assert isinstance(rec["created_at"], str)          # ISO strings, as embedded
    hits = api.search("Boston", user_id=user)["results"]
    assert "Boston" in hits[0]["memory"] and 0 <= hits[0]["score"] <= 1
    explained = api.search("Boston", user_id=user, explain=True)["results"][0]
    assert "signals" in explained or "channels" in explained or "semantic" in json.dumps(explained)
    assert len(api.get_all(user_id=user)["results"]) == 2
    assert api.get("no-such-id") is None


def test_update_history_delete(api, user):
    mid = api.add("I live in Boston", user_id=user, infer=False)["results"][0]["id"]
    api.update(mid, text="I live in Seattle", metadata={"source": "test"})
    rec = api.get(mid)
    assert rec["memory"] == "I live in Seattle" and rec["metadata"] == {"source": "test"}
    events = [h["event"] for h in api.history(mid)]
    assert events[:2] == ["ADD", "UPDATE"]
    assert api.delete(mid)["deleted"] == 1
    assert api.get(mid) is None
    with pytest.raises(NotFoundError):
        api.delete(mid)
    with pytest.raises(NotFoundError):
        api.update("missing-id", text="x")


def test_errors_are_the_same_classes(api, user):
    with pytest.raises(FilterError):
        api.search("anything")
    with pytest.raises(FilterError):
        api.get_all(filters={"user_id": user, "score": {"$bogus": 1}})
    with pytest.raises(IdentityError):
        api.add("hello", user_id=user, agent_id=None, run_id=None, metadata={"user_id": "someone-else"})
    with pytest.raises(TypeError):
        api.add("hello", user_id=user, colour="red")


def test_delete_all_only_touches_its_scope(api, user):
    other = user + "-other"
    api.add("I like tea", user_id=user, infer=False)
    api.add("I like coffee", user_id=other, infer=False)
    assert api.delete_all(user_id=user)["deleted"] == 1
    assert api.get_all(user_id=user)["results"] == []
    assert [r["memory"] for r in api.get_all(user_id=other)["results"]] == ["I like coffee"]


def test_truth_over_time_with_datetimes(api, user):
    api.add("I live in Boston", user_id=user, timestamp=dt.datetime(2023, 3, 1))
    api.add("I moved to Seattle", user_id=user, timestamp="2023-05-01")
    now = [r["memory"] for r in api.get_all(user_id=user)["results"]]
    then = [r["memory"] for r in api.get_all(user_id=user, as_of=dt.datetime(2023, 4, 1))["results"]]
    assert len(now) == 1 and "Seattle" in now[0] and len(then) == 1 and "Boston" in then[0]
    tl = api.timeline(user_id=user)
    assert isinstance(tl, pl.DataFrame) and sorted(tl["status"].to_list()) == ["current", "superseded"]
    assert tl.schema["valid_from"] == pl.Datetime("us")
    assert isinstance(api.contradictions(user_id=user), pl.DataFrame)


def test_frames_and_sql_cross_as_arrow(api, user):
    api.add("I play the cello", user_id=user, infer=False)
    f = api.frame("memories", user_id=user)
    assert isinstance(f, pl.DataFrame) and f["memory"].to_list() == ["I play the cello"]
    n = api.sql(f"select count(*) as n from memories where user_id = '{user}'")
    assert isinstance(n, pl.DataFrame) and n["n"].to_list() == [1]
    ex = api.explain_search("cello", user_id=user)
    assert isinstance(ex, pl.DataFrame) and ex["memory"].to_list()[0] == "I play the cello"


def test_ingest_returns_a_report(api, user):
    r = api.ingest(DEMO_JSONL, user_id=user)
    assert r.messages["stored"] > 0 and r.balanced() and r.status.startswith("done")
    again = api.ingest(DEMO_JSONL, user_id=user)
    assert again.messages["stored"] == 0 and again.messages["already_ingested"] == r.messages["stored"]
    assert "messages stored" in str(r)


def test_forget_returns_a_verified_receipt(api, user):
    api.add("My passport number is X123", user_id=user, infer=False)
    receipt = api.forget(user_id=user)
    assert receipt["verified"] is True and receipt["verification"]["hits"] == {}
    assert isinstance(receipt["requested_at"], dt.datetime)
    assert api.get_all(user_id=user)["results"] == []
    assert api.erasure_receipts(user_id=user)[0]["id"] == receipt["id"]


def test_same_calls_give_the_same_answers(server, tmp_path):
    """The same sequence through both implementations: equal results once ids and times are set aside."""
    user = f"same-{uuid.uuid4().hex[:8]}"
    outs = []
    for m in (Memory(str(tmp_path / "a.duckdb"), config=CONFIG), server.client()):
        steps = [m.add("I'm vegetarian and I live in Boston", user_id=user)["results"],
                 m.add("I moved to Denver", user_id=user)["results"],
                 m.get_all(user_id=user)["results"],
                 m.get_all(user_id=user, include_superseded=True)["results"],
                 m.search("where does the user live", user_id=user, top_k=3)["results"]]
        outs.append([_strip(s) for s in steps])
        m.close()
    assert outs[0] == outs[1]


def test_async_memory_wraps_either(server, tmp_path, user):
    async def run(am):
        await am.add("I love hiking", user_id=user, infer=False)
        return [r["memory"] for r in (await am.get_all(user_id=user))["results"]]

    for inner in (Memory(str(tmp_path / "b.duckdb"), config=CONFIG), server.client()):
        am = AsyncMemory(memory=inner)
        assert asyncio.run(run(am)) == ["I love hiking"]
        am.close()


def test_a_file_can_be_uploaded_for_ingest(server, user):
    c = server.client()
    r = c.ingest_upload(DEMO_JSONL, user_id=user)
    assert r.messages["stored"] > 0 and r.balanced()
    assert c.get_all(user_id=user)["results"]
    c.close()


def _params(fn) -> list[tuple]:
    import inspect

    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("name", sorted(__import__("memstore.api.protocol", fromlist=["METHODS"]).METHODS))
def test_protocol_signatures_are_the_real_ones(name):
    """MemoryAPI declares each method with Memory's own parameters (names, kinds, defaults), and the
    HTTP client's generated methods carry the same signature: the interface cannot drift silently."""
    from memstore.api.http_client import MemoryClient
    from memstore.api.protocol import MemoryAPI
    from memstore.memory import Memory

    assert _params(getattr(MemoryAPI, name)) == _params(getattr(Memory, name))
    assert _params(getattr(MemoryClient, name)) == _params(getattr(Memory, name))


def test_a_repeated_raw_message_keeps_one_memory_and_every_source(api, user):
    first = api.add("Deploys are frozen on Fridays", user_id=user, infer=False, metadata={"from": "slack"})
    mid = first["results"][0]["id"]
    again = api.add("Deploys are frozen on Fridays", user_id=user, infer=False, metadata={"from": "email"})
    assert [(r["id"], r["event"], r["deduplicated"], r["metadata"]) for r in again["results"]] == \
        [(mid, "NONE", True, {"from": "email"})]
    assert len(api.get_all(user_id=user)["results"]) == 1
    assert [s["metadata"] for s in api.get(mid)["sources"]] == [{"from": "slack"}, {"from": "email"}]
