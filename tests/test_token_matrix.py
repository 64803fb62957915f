"""Every route and every `/v1` method × every kind of caller → allow / not-found / unauthorized, on
the real FastAPI app in-process (a real DuckDB file, the hashing embedder), with data seeded for
alice, bob and an agent. No answer to a non-admin token may hold another scope's text or id.

The expected outcome of each (route kind, caller) pair is written out in EXPECT below, not derived
from the code under test. The real-subprocess tests are in tests/test_tokens_server.py."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from fastapi.testclient import TestClient

from memstore import Memory
from memstore.api.protocol import METHODS
from memstore.server.app import create_app
from memstore.wire.format import dumps

CONFIG = {"embedder": {"provider": "hashing"}}
ADMIN_TOKEN = "admin-" + uuid.uuid4().hex

# What each kind of caller gets from each kind of route, when the call targets ALICE's data
# (user_id="alice" named, or one of alice's memory ids). ok = 2xx, nf = 404 NotFoundError,
# denied = 403 TokenRightsError, auth = 401 AuthError.
CALLERS = ("admin", "alice", "alice_ro", "bob", "agent", "expired", "revoked", "missing", "garbage")
EXPECT = {
    #              admin  alice  alice_ro  bob   agent(support-bot: alice narrows its scope)
    "read_scope":  ("ok", "ok", "ok",     "nf", "ok"),
    "write_scope": ("ok", "ok", "denied", "nf", "ok"),
    "read_id":     ("ok", "ok", "ok",     "nf", "nf"),
    "write_id":    ("ok", "ok", "denied", "nf", "nf"),
    "admin":       ("ok", "denied", "denied", "denied", "denied"),
}
STATUS = {"ok": range(200, 300), "nf": (404,), "denied": (403,), "auth": (401,)}


def expected(kind: str, caller: str) -> str:
    if caller in ("expired", "revoked", "missing", "garbage"):
        return "auth"
    return EXPECT[kind][CALLERS.index(caller)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One store: alice's, bob's and the support bot's memories; a token of each kind; the app."""
    d = tmp_path_factory.mktemp("tokens")
    m = Memory(str(d / "t.duckdb"), config=CONFIG)
    seed = {
        "alice": m.add("Alice keeps her spare key under the zebra-7731 flowerpot", user_id="alice", infer=False),
        "alice2": m.add("Alice collects marimba-4420 records", user_id="alice", infer=False),
        "bob": m.add("Bob's passport number is quokka-5529", user_id="bob", infer=False),
        "carol": m.add("Carol's ticket says walrus-1234 broke again", user_id="carol", agent_id="support-bot",
                       infer=False),
    }
    ids = {k: v["results"][0]["id"] for k, v in seed.items()}
    tokens = {"admin": ADMIN_TOKEN,
              "alice": m.create_token("alice-laptop", user_id="alice")["token"],
              "alice_ro": m.create_token("alice-ro", user_id="alice", read_only=True)["token"],
              "bob": m.create_token("bob-phone", user_id="bob")["token"],
              "agent": m.create_token("support-bot", agent_id="support-bot")["token"],
              "expired": m.create_token("short", user_id="alice", expires="1s")["token"],
              "revoked": m.create_token("gone", user_id="alice")["token"],
              "garbage": "mst_" + uuid.uuid4().hex}
    m.revoke_token("gone")
    # text and ids each caller may see; everything else seeded is foreign to it
    own = {"alice": {"alice", "alice2"}, "alice_ro": {"alice", "alice2"}, "bob": {"bob"}, "agent": {"carol"}}
    markers = {"alice": ["zebra-7731", ids["alice"]], "alice2": ["marimba-4420", ids["alice2"]],
               "bob": ["quokka-5529", ids["bob"]], "carol": ["walrus-1234", ids["carol"]]}
    upload = d / "chat.jsonl"
    upload.write_text('{"role": "user", "content": "I grow tomatoes", "created_at": "2024-03-01T10:00"}\n')
    app = create_app(m, token=ADMIN_TOKEN, committer=None, mcp=False)
    time.sleep(1.1)         # "short" has expired
    with TestClient(app, raise_server_exceptions=False) as client:
        yield {"m": m, "ids": ids, "tokens": tokens, "own": own, "markers": markers, "client": client,
               "dir": d, "upload": str(upload)}
    m.close()


def _headers(world, caller: str) -> dict:
    return {} if caller == "missing" else {"Authorization": f"Bearer {world['tokens'][caller]}"}


def _scratch(world) -> str:
    """A fresh memory of alice's, for the calls that change or delete one."""
    return world["m"].add(f"scratch note {uuid.uuid4().hex[:8]}", user_id="alice", infer=False)["results"][0]["id"]


def _v1_case(world, name: str):
    """(kind, args, kwargs) of a call of /v1/<name> aimed at alice's data."""
    ids, run = world["ids"], f"scratch-{uuid.uuid4().hex[:6]}"
    alice = {"user_id": "alice"}
    table = {
        "add": ("write_scope", ["I like tea"], {**alice, "infer": False}),
        "search": ("read_scope", ["flowerpot"], alice),
        "explain_search": ("read_scope", ["flowerpot"], alice),
        "get": ("read_id", [ids["alice"]], {}),
        "get_all": ("read_scope", [], alice),
        "history": ("read_id", [ids["alice"]], {}),
        "update": ("write_id", lambda: [_scratch(world)], {"text": f"updated {uuid.uuid4().hex[:8]}"}),
        "delete": ("write_id", lambda: [_scratch(world)], {}),
        "delete_all": ("write_scope", [], {**alice, "run_id": run}),
        "timeline": ("read_scope", [], alice),
        "contradictions": ("read_scope", [], alice),
        "resolve": ("write_id", lambda: [_scratch(world), {"dismiss": [_scratch(world)]}], None),
        "purge_expired": ("write_scope", [], alice),
        "forget": ("write_scope", [], {**alice, "run_id": run, "scrub": False}),
        "erasure_receipts": ("read_scope", [], alice),
        "ingest": ("admin", [world["upload"]], {**alice, "run_id": run}),
        "ingest_known": ("read_scope", [[{"conversation": "c1", "keys": ["m1"]}]], {**alice, "format": "jsonl"}),
        "ingest_prepared": ("write_scope", [[]], alice),
        "frame": ("read_scope", ["memories"], alice),
        "sql": ("admin", ["SELECT memory FROM memories"], {}),
        "search_all": ("admin", ["flowerpot"], {}),
        "export_parquet": ("admin", [str(world["dir"] / f"export-{uuid.uuid4().hex[:6]}")], {}),
        "doctor": ("admin", [], {}),
        "optimize": ("admin", [], {}),
        "scrub": ("admin", [], {}),
        "reset": ("admin", [], {}),
        "set_retention": ("admin", ["messages", 30], alice),
        "clear_retention": ("admin", ["messages"], alice),
        "retention_policies": ("admin", [], {}),
        "apply_retention": ("admin", [], {"dry_run": True}),
        "create_token": ("admin", [f"t-{uuid.uuid4().hex[:8]}"], alice),
        "list_tokens": ("admin", [], {}),
        "revoke_token": ("admin", lambda: [world["m"].create_token(f"r-{uuid.uuid4().hex[:8]}", user_id="x")["name"]],
                         {}),
    }
    kind, args, kwargs = table[name]
    if callable(args):          # made only for the call that needs them
        args = args()
        if kwargs is None:
            args, kwargs = args[:-1], args[-1]
    return kind, args, kwargs


def _rest_case(world, route: str):
    """(kind, method, path, json body or None) of a mem0 REST call aimed at alice's data."""
    ids = world["ids"]
    table = {
        "POST /memories": ("write_scope", "POST", "/memories",
                           {"messages": [{"role": "user", "content": "I like tea"}], "user_id": "alice",
                            "infer": False}),
        "GET /memories": ("read_scope", "GET", "/memories?user_id=alice", None),
        "GET /memories/{id}": ("read_id", "GET", f"/memories/{ids['alice']}", None),
        "POST /search": ("read_scope", "POST", "/search", {"query": "flowerpot", "user_id": "alice"}),
        "PUT /memories/{id}": ("write_id", "PUT", lambda: f"/memories/{_scratch(world)}",
                               {"text": f"new text {uuid.uuid4().hex[:8]}"}),
        "GET /memories/{id}/history": ("read_id", "GET", f"/memories/{ids['alice']}/history", None),
        "DELETE /memories/{id}": ("write_id", "DELETE", lambda: f"/memories/{_scratch(world)}", None),
        "DELETE /memories": ("write_scope", "DELETE",
                             f"/memories?user_id=alice&run_id=scratch-{uuid.uuid4().hex[:6]}", None),
        "POST /reset": ("admin", "POST", "/reset", None),
        "POST /v1/ingest_upload": ("write_scope", "POST",
                                   "/v1/ingest_upload?filename=chat.jsonl&user_id=alice"
                                   f"&run_id=up-{uuid.uuid4().hex[:6]}",
                                   "upload"),
    }
    kind, method, path, body = table[route]
    return kind, method, path() if callable(path) else path, body


REST_ROUTES = ("POST /memories", "GET /memories", "GET /memories/{id}", "POST /search", "PUT /memories/{id}",
               "GET /memories/{id}/history", "DELETE /memories/{id}", "DELETE /memories", "POST /reset",
               "POST /v1/ingest_upload")


def _send(world, caller, method, path, body):
    client = world["client"]
    headers = _headers(world, caller)
    if body == "upload":
        with open(world["upload"], "rb") as fh:
            return client.request(method, path, content=fh.read(), headers=headers), path
    if body is None:
        return client.request(method, path, headers=headers), path
    raw = dumps(body)
    return client.request(method, path, content=raw, headers={**headers, "content-type": "application/json"}), \
        path + (raw if isinstance(raw, str) else raw.decode())


def _check(world, caller, kind, resp, sent: str, what: str) -> None:
    want = expected(kind, caller)
    assert resp.status_code in STATUS[want], \
        f"{what} as {caller}: want {want}, got {resp.status_code} {resp.text[:300]}"
    if want == "nf":
        assert resp.json()["error"]["type"] == "NotFoundError", resp.text
    if want in ("denied", "auth"):
        assert resp.json()["error"]["type"] == ("TokenRightsError" if want == "denied" else "AuthError"), resp.text
    if caller != "admin":
        _assert_no_leak(world, caller, resp, sent, what)


def _assert_no_leak(world, caller, resp, sent: str, what: str) -> None:
    """Nothing seeded outside the caller's scope is in the answer (unless the caller sent it)."""
    body = resp.content.decode("utf-8", "replace") if not resp.headers.get("content-type", "").startswith(
        "application/vnd.apache.arrow") else _arrow_text(resp.content)
    own = world["own"].get(caller, set())
    leaked = [mk for key, marks in world["markers"].items() if key not in own for mk in marks
              if mk in body and mk not in sent]
    assert not leaked, f"{what} as {caller} leaked {leaked}: {body[:400]}"


def _arrow_text(content: bytes) -> str:
    from memstore.wire.format import ipc_to_frame

    return json.dumps(ipc_to_frame(content).to_dicts(), default=str)


@pytest.mark.parametrize("caller", CALLERS)
def test_every_v1_method_for_every_caller(world, caller):
    for name in METHODS:
        if name == "reset" and caller == "admin":
            continue        # would empty the shared store; the admin's reset is tested in test_server.py
        kind, args, kwargs = _v1_case(world, name)
        raw = dumps({"args": args, "kwargs": kwargs})
        resp = world["client"].post(f"/v1/{name}", content=raw, headers=_headers(world, caller))
        _check(world, caller, kind, resp, (raw if isinstance(raw, str) else raw.decode()), f"/v1/{name}")


@pytest.mark.parametrize("caller", CALLERS)
def test_every_mem0_route_and_the_upload_for_every_caller(world, caller):
    for route in REST_ROUTES:
        if route == "POST /reset" and caller == "admin":
            continue
        kind, method, path, body = _rest_case(world, route)
        resp, sent = _send(world, caller, method, path, body)
        _check(world, caller, kind, resp, sent, route)


@pytest.mark.parametrize("caller", ["alice", "alice_ro", "bob", "agent"])
def test_a_missing_identity_becomes_the_tokens_scope(world, caller):
    """No user_id / filter at all: a scoped token gets its own scope, and only it."""
    c, h = world["client"], _headers(world, caller)
    own_texts = {"alice": ["zebra-7731"], "alice_ro": ["zebra-7731"], "bob": ["quokka-5529"],
                 "agent": ["walrus-1234"]}[caller]
    for resp in (c.get("/memories?limit=1000", headers=h),
                 c.post("/search", json={"query": "flowerpot passport ticket"}, headers=h),
                 c.post("/v1/get_all", content=dumps({"kwargs": {"top_k": 500}}), headers=h),
                 c.post("/v1/frame", content=dumps({"args": ["memories"]}), headers=h)):
        assert resp.status_code == 200, resp.text
        _assert_no_leak(world, caller, resp, "", "implicit scope")
        body = resp.text if not resp.headers["content-type"].startswith("application/vnd.apache.arrow") \
            else _arrow_text(resp.content)
        assert all(t in body for t in own_texts), (caller, body[:300])


def test_another_scope_answers_exactly_as_an_unknown_one(world):
    """bob's token naming alice (who exists) and naming nobody (who does not): same status and
    message, with only the asked-for value differing; ids likewise."""
    c, h = world["client"], _headers(world, "bob")
    unknown_id = str(uuid.uuid4())

    def answer(resp, asked: str) -> tuple:
        return resp.status_code, resp.json()["error"]["type"], resp.json()["error"]["message"].replace(asked, "<X>")

    for route in ("/v1/get_all", "/v1/search", "/v1/timeline", "/v1/erasure_receipts"):
        args = ["flowerpot"] if route == "/v1/search" else []
        a = c.post(route, content=dumps({"args": args, "kwargs": {"user_id": "alice"}}), headers=h)
        b = c.post(route, content=dumps({"args": args, "kwargs": {"user_id": "nobody-here"}}), headers=h)
        assert answer(a, "alice") == answer(b, "nobody-here") and a.status_code == 404
    for flt in ({"user_id": "alice"}, {"OR": [{"user_id": "alice"}, {"topic": "x"}]}):
        a = c.post("/v1/search", content=dumps({"args": ["key"], "kwargs": {"filters": flt}}), headers=h)
        b = c.post("/v1/search", content=dumps({"args": ["key"], "kwargs": {"filters": json.loads(
            json.dumps(flt).replace("alice", "nobody-here"))}}), headers=h)
        assert answer(a, "alice") == answer(b, "nobody-here") and a.status_code == 404
    for path in ("/memories/{}", "/memories/{}/history"):
        a = c.get(path.format(world["ids"]["alice"]), headers=h)
        b = c.get(path.format(unknown_id), headers=h)
        assert answer(a, world["ids"]["alice"]) == answer(b, unknown_id) and a.status_code == 404
    a = c.post("/v1/update", content=dumps({"args": [world["ids"]["alice"]], "kwargs": {"text": "x"}}), headers=h)
    b = c.post("/v1/update", content=dumps({"args": [unknown_id], "kwargs": {"text": "x"}}), headers=h)
    assert answer(a, world["ids"]["alice"]) == answer(b, unknown_id)
    assert "forbidden" not in (a.text + b.text).lower()
    assert world["m"].get(world["ids"]["alice"])["memory"].startswith("Alice keeps")


def test_writes_with_a_named_token_record_it_as_the_actor(world):
    c = world["client"]
    out = c.post("/v1/add", content=dumps({"args": ["I moved to Porto"], "kwargs": {"infer": False,
                                                                                   "actor_id": "someone-else"}}),
                 headers=_headers(world, "alice")).json()
    mid = out["results"][0]["id"]
    c.put(f"/memories/{mid}", json={"text": "I moved to Braga"}, headers=_headers(world, "alice"))
    c.post("/v1/update", content=dumps({"args": [mid], "kwargs": {"text": "I moved to Faro", "actor_id": "me"}}),
           headers=_headers(world, "admin"))
    events = world["m"].history(mid)
    assert [(e["event"], e["actor_id"]) for e in events] == [("ADD", "token:alice-laptop"),
                                                             ("UPDATE", "token:alice-laptop"), ("UPDATE", "me")]
    assert world["m"].get(mid)["user_id"] == "alice"


def test_revocation_and_new_tokens_through_the_server_hold_from_the_next_request(world):
    c, admin = world["client"], _headers(world, "admin")
    made = c.post("/v1/create_token", content=dumps({"args": ["eve-1"], "kwargs": {"user_id": "eve"}}),
                  headers=admin).json()
    h = {"Authorization": f"Bearer {made['token']}"}
    assert c.get("/memories", headers=h).status_code == 200
    listed = c.post("/v1/list_tokens", content=b"{}", headers=admin).json()
    row = next(r for r in listed if r["name"] == "eve-1")
    assert row["last_used_at"] is not None and "token" not in row and not any(made["token"] in str(v)
                                                                             for v in row.values())
    assert c.post("/v1/revoke_token", content=dumps({"args": ["eve-1"]}), headers=admin).status_code == 200
    r = c.get("/memories", headers=h)
    assert r.status_code == 401 and r.json()["error"]["type"] == "AuthError"


def test_forget_erases_the_scopes_tokens_and_the_server_stops_taking_them(world):
    c, admin = world["client"], _headers(world, "admin")
    made = c.post("/v1/create_token", content=dumps({"args": ["zed-1"], "kwargs": {"user_id": "zed"}}),
                  headers=admin).json()
    h = {"Authorization": f"Bearer {made['token']}"}
    assert c.post("/v1/add", content=dumps({"args": ["I am Zed"], "kwargs": {"infer": False}}),
                  headers=h).status_code == 200
    r = c.post("/v1/forget", content=dumps({"kwargs": {"user_id": "zed", "scrub": False}}), headers=admin)
    assert r.status_code == 200, r.text
    assert c.get("/memories", headers=h).status_code == 401
    assert "zed-1" not in [t["name"] for t in world["m"].list_tokens()]


def test_without_the_analyst_api_a_scoped_token_still_reads_its_own_frames(world):
    """`--no-analyst-api` refuses unscoped frames to the admin; a scoped token's frame is scoped."""
    app = create_app(world["m"], token=ADMIN_TOKEN, committer=None, mcp=False, analyst_api=False)
    with TestClient(app, raise_server_exceptions=False) as c:
        body = dumps({"args": ["memories"]})
        assert c.post("/v1/frame", content=body, headers=_headers(world, "admin")).status_code == 401
        r = c.post("/v1/frame", content=body, headers=_headers(world, "bob"))
        assert r.status_code == 200 and "quokka-5529" in _arrow_text(r.content)
        _assert_no_leak(world, "bob", r, "", "frame without the analyst API")
        assert c.post("/v1/sql", content=dumps({"args": ["SELECT 1"]}),
                      headers=_headers(world, "bob")).status_code == 403
