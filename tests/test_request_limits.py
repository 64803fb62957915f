"""Request limits (issue 44): body size per route, messages per add, characters per message,
metadata size — configurable (`limits.*`, `serve --max-body`), documented in the OpenAPI document,
answered 413 naming the limit, the same at every door (library, server, typed in the client).
CPU and RSS of oversized requests: bench/request_limits.py.
"""
from __future__ import annotations

import http.client
import json

import pytest

from memstore import Memory
from memstore.core.config import MemoryConfig
from memstore.core.errors import ConfigError, RequestTooLargeError
from memstore.testing.server_process import ServerProcess

LIMITS = {"max_message_chars": 2000, "max_messages": 5, "max_metadata_bytes": 1024}
CONFIG = {"embedder": {"provider": "hashing"}, "limits": LIMITS}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = tmp_path_factory.mktemp("limits") / "l.duckdb"
    with ServerProcess(store, config=CONFIG, args=["--max-body", "64KB"]) as srv:
        yield srv


def post(srv: ServerProcess, path: str, body: bytes, *, chunked: bool = False) -> tuple[int, dict]:
    con = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    con.putrequest("POST", path)
    con.putheader("Authorization", f"Bearer {srv.token}")
    con.putheader("Content-Type", "application/json")
    try:
        if chunked:
            con.putheader("Transfer-Encoding", "chunked")
            con.endheaders()
            for i in range(0, len(body), 16384):
                part = body[i:i + 16384]
                con.send(b"%x\r\n" % len(part) + part + b"\r\n")
            con.send(b"0\r\n\r\n")
        else:
            con.putheader("Content-Length", str(len(body)))
            con.endheaders()
            con.send(body)
    except OSError:
        pass                 # answered and closed before the whole body was sent
    resp = con.getresponse()
    return resp.status, json.loads(resp.read())


def _limit(body: dict) -> tuple[str, str, int, int]:
    err = body["error"]
    return err["type"], err["fields"]["limit"], err["fields"]["allowed"], err["fields"]["got"]


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_413_naming_it_and_nothing_is_stored(server, chunked):
    big = json.dumps({"messages": [{"role": "user", "content": "Quibblezorn " * 20000}], "user_id": "ann"}).encode()
    status, body = post(server, "/memories", big, chunked=chunked)
    kind, limit, allowed, got = _limit(body)
    assert (status, kind, limit, allowed) == (413, "RequestTooLargeError", "limits.max_body_bytes", 64 << 10), body
    assert got > allowed and "limits.max_body_bytes" in body["error"]["message"]
    assert server.client().get_all(user_id="ann")["results"] == []


@pytest.mark.parametrize("kwargs, limit", [
    ({"messages": "x " * 1500, "user_id": "bo"}, "limits.max_message_chars"),
    ({"messages": [{"role": "user", "content": f"m{i}"} for i in range(6)], "user_id": "bo"}, "limits.max_messages"),
    ({"messages": "hello there", "user_id": "bo", "metadata": {"k": "v" * 2000}}, "limits.max_metadata_bytes"),
])
def test_messages_and_metadata_over_their_limits_are_413_at_every_door(server, tmp_path, kwargs, limit):
    status, body = post(server, "/v1/add", json.dumps({"kwargs": kwargs}).encode())
    assert status == 413 and _limit(body)[1] == limit, body
    with pytest.raises(RequestTooLargeError) as typed:           # the client: the same typed error
        server.client().add(**kwargs)
    assert limit in str(typed.value)
    m = Memory(str(tmp_path / "lib.duckdb"), config=CONFIG)      # the library: the same rule
    try:
        with pytest.raises(RequestTooLargeError, match=limit.replace(".", r"\.")):
            m.add(**kwargs)
        assert m.get_all(user_id="bo")["results"] == []
    finally:
        m.close()


def test_within_the_limits_is_stored(server):
    out = server.client().add([{"role": "user", "content": f"I keep bees number {i}"} for i in range(5)],
                              user_id="cy", infer=False, metadata={"k": "v" * 500})
    assert len(out["results"]) == 5


def test_the_openapi_document_states_the_limits(server):
    con = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    con.request("GET", "/openapi.json")
    doc = json.loads(con.getresponse().read())
    assert doc["x-memstore-limits"] == {"max_body_bytes": 64 << 10, "max_upload_bytes": 256 << 20, **LIMITS}
    assert "65,536" in doc["info"]["description"]
    add = doc["paths"]["/v1/add"]["post"]["responses"]["413"]["description"]
    assert "65,536" in add and "2,000 characters" in add
    assert "268,435,456" in doc["paths"]["/v1/ingest_upload"]["post"]["responses"]["413"]["description"]
    assert "202" in doc["paths"]["/v1/forget"]["post"]["responses"]
    assert doc["components"]["schemas"]["MemoryCreate"]["properties"]["messages"]["maxItems"] == 5


def test_limits_are_checked_config_keys():
    assert MemoryConfig.from_dict({"limits": {"max_body_bytes": 1 << 20}}).limits.max_body_bytes == 1 << 20
    with pytest.raises(ConfigError, match="limits.max_messages"):
        MemoryConfig.from_dict({"limits": {"max_messages": 0}})
    with pytest.raises(ConfigError, match="limits.max_bdy"):
        MemoryConfig.from_dict({"limits": {"max_bdy": 1}})
