"""What schemathesis (tests/test_openapi_fuzz.py, scripts/run_outside_suites.sh) found, one test
each: the statuses the OpenAPI document promises, and the library errors behind them."""
from __future__ import annotations

import threading

import pytest
from starlette.testclient import TestClient

from memstore import Memory
from memstore.core.errors import (
    ErasureIncompleteError,
    ExportExistsError,
    FilterError,
    NotFoundError,
    StoreBusyError,
    TimeParseError,
    TokenExistsError,
)
from memstore.core.timeutil import parse_time
from memstore.server.app import create_app

TOKEN = "t"


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    m = Memory(str(tmp_path_factory.mktemp("st") / "s.duckdb"), config={"embedder": {"provider": "hashing"}},
               embedded=True)
    m.add("I drink green tea", user_id="alice", metadata={"kind": "drink"}, infer=False)
    yield m
    m.close()


@pytest.fixture(scope="module")
def client(memory):
    return TestClient(create_app(memory, token=TOKEN, mcp=False), headers={"Authorization": f"Bearer {TOKEN}"})


def test_mem0_paths_without_a_scope_are_forbidden(client):
    """Decision: naming no scope with the admin token would reach every scope's memories: 403."""
    answers = [client.get("/memories"), client.delete("/memories"),
               client.post("/v1/ingest_upload?filename=c.json", content=b"[]")]
    assert [a.status_code for a in answers] == [403, 403, 403]
    assert {a.json()["error"]["type"] for a in answers} == {"ScopeViolation"}
    assert client.get("/memories", params={"user_id": "alice"}).status_code == 200


def test_conflicts_answer_409(client, tmp_path):
    assert client.post("/v1/create_token", json={"kwargs": {"name": "laptop", "user_id": "alice"}}).status_code == 200
    again = client.post("/v1/create_token", json={"kwargs": {"name": "laptop", "user_id": "alice"}})
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    export = client.post("/v1/export_parquet", json={"kwargs": {"directory": str(tmp_path / "full")}})
    twice = client.post("/v1/search", json={"kwargs": {"query": "tea", "user_id": "alice",
                                                       "filters": {"user_id": "bob"}}})
    past = client.post("/v1/create_token", json={"kwargs": {"name": "old", "user_id": "alice",
                                                             "expires": "2001-01-01"}})
    future = client.post("/v1/create_token", json={"kwargs": {"name": "new", "user_id": "alice",
                                                               "expires": "2099-01-01T00:00Z"}})
    assert [again.status_code, export.status_code, twice.status_code, past.status_code] == [409, 409, 409, 409]
    assert [a.json()["error"]["type"] for a in (again, export, twice, past)] == \
        ["TokenExistsError", "ExportExistsError", "IdentityConflictError", "TokenExpiryError"]
    assert future.status_code == 200 and future.json()["expires_at"].startswith("2099-01-01")


def test_documented_values_are_taken_as_documented(client):
    """85.0 is an integer in JSON Schema; a lone surrogate escape is read as U+FFFD, not refused."""
    assert len(client.post("/v1/get_all", json={"kwargs": {"user_id": "alice", "top_k": 2.0}}).json()["results"]) == 1
    added = client.post("/v1/add", content=b'{"kwargs": {"messages": "tea \\ud800 time", "user_id": "sur", '
                                           b'"infer": false}}', headers={"Content-Type": "application/json"})
    assert added.status_code == 200, added.text
    assert added.json()["results"][0]["memory"] == "tea \ufffd time"
    bad_id = client.get("/memories/not%2Can%2Cid/history")
    assert bad_id.status_code == 422 and bad_id.json()["error"]["type"] == "InvalidInputError"


def test_json_upload_must_be_an_export(client):
    bad = client.post("/v1/ingest_upload?filename=c.json&user_id=alice", json=[{"chat_messages": [{"text": {}}]}])
    not_json = client.post("/v1/ingest_upload?filename=c.json&user_id=alice", content=b"\xff\xfe",
                           headers={"Content-Type": "application/json"})
    ok = client.post("/v1/ingest_upload?filename=c.json&user_id=alice",
                     json=[{"chat_messages": [{"sender": "human", "text": "I keep bees"}]}])
    null = client.post("/v1/ingest_upload?filename=c.json&user_id=alice&format=locomo", content=b"null",
                       headers={"Content-Type": "application/json"})
    assert [bad.status_code, not_json.status_code, null.status_code, ok.status_code] == [400, 400, 400, 200]
    assert ok.json()["messages"]["stored"] == 1


def test_library_errors_found_by_fuzzing(memory, tmp_path):
    with pytest.raises(TimeParseError):
        parse_time("0001-01-01T00:00:00+01:00")        # before year 1 in UTC: was a raw OverflowError
    with pytest.raises(TokenExistsError):
        memory.create_token("dup", user_id="alice")
        memory.create_token("dup", user_id="alice")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportExistsError):
        memory.export_parquet(str(tmp_path / "file" / "inside"))   # was a raw NotADirectoryError
    with pytest.raises(NotFoundError):
        memory.resolve("nope", dismiss="nope")         # an unknown id is 404 before any overlap rule
    for key in ("$kind", '$.a.""', "$.a[1234567890123]"):       # each was DuckDB's "JSON path error"
        with pytest.raises(FilterError):
            memory.search("tea", user_id="alice", filters={key: "drink"})
    hits = memory.search("tea", user_id="alice", filters={"$.kind": "drink"})["results"]
    assert [h["memory"] for h in hits] == ["I drink green tea"]
    found = memory.search_all("tea", exact=True, show_expired=True, include_superseded=True)["results"]
    assert "I drink green tea" in [h["memory"] for h in found]       # was "excess parameter: now"


def test_checkpoint_waits_then_says_busy(memory, monkeypatch):
    """A CHECKPOINT (scrub, forget, optimize) while another connection's write is open waits a
    little, then raises StoreBusyError (retryable) instead of DuckDB's TransactionContext error."""
    import memstore.store.database as database

    monkeypatch.setattr(database, "_CHECKPOINT_TRIES", 2)
    opened, release = threading.Event(), threading.Event()

    def open_write() -> None:
        cur = memory.db._con.cursor()
        cur.execute("BEGIN TRANSACTION")
        cur.execute("UPDATE store_meta SET value = value")      # an UPDATE holds off a CHECKPOINT (an INSERT not)
        opened.set()
        release.wait(10)
        cur.execute("ROLLBACK")

    t = threading.Thread(target=open_write)
    t.start()
    opened.wait(10)
    try:
        with pytest.raises(StoreBusyError) as info:
            memory.scrub()
        assert info.value.retryable
        memory.add("I live in Porto", user_id="gone", infer=False)
        with pytest.raises(ErasureIncompleteError):   # the rows go; the rewrite waits (journaled), said honestly
            memory.forget(user_id="gone")
    finally:
        release.set()
        t.join()
    assert isinstance(memory.scrub(), dict)        # the writer gone: it runs, and finishes the erasure
    assert memory.erasure_receipts(user_id="gone")[-1]["verified"] is True


def test_an_add_of_tool_calls_only_is_invalid_in_the_document(client):
    """Found by schemathesis (seed 2): a lone assistant message that only calls tools was
    schema-valid, yet add() refuses it (nothing to remember): the document now says so, and a
    procedural add (an agent's run) may still be tool calls only."""
    import jsonschema

    doc = client.get("/openapi.json").json()
    body = doc["paths"]["/v1/add"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    check = jsonschema.Draft202012Validator({**body, "components": doc["components"]})
    only_tools = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "lookup"}}]}
    bad = {"kwargs": {"messages": only_tools, "user_id": "alice"}}
    mixed = {"kwargs": {"messages": [only_tools, {"role": "user", "content": "I like tea"}], "user_id": "alice"}}
    procedural = {"kwargs": {"messages": [only_tools], "agent_id": "bot", "memory_type": "procedural_memory"}}
    assert not check.is_valid(bad) and not check.is_valid({"kwargs": {"messages": [only_tools], "user_id": "a"}})
    assert check.is_valid(mixed) and check.is_valid(procedural)
    assert check.is_valid({"kwargs": {"messages": "I like tea", "user_id": "alice"}})
    answer = client.post("/v1/add", json=bad)          # still refused, with the reason
    assert answer.status_code == 400 and "nothing to remember" in answer.json()["error"]["message"]
