"""The one scope rule (memstore/core/scope_rule.py) at every door: the golden cases of
tests/golden/rules/identity.jsonl (padded, tab-prefixed, NFC/NFD, mixed-case and confusable ids,
and ids with no canonical form) through the library, a server with a scoped token, a front
(`serve --fronts 1`), MCP over stdio and over HTTP. Each valid id is stored under its canonical
form and read back by it; each invalid one is refused with IdentityError and stores nothing. The
cluster's door (HAProxy + shards) is tests/test_cluster_scope.py."""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest

from memstore import IdentityError, Memory
from memstore.core.scope_rule import MAX_ID_CHARS, canonical_id, confine_scope, is_canonical, placement_key
from memstore.testing.server_process import ServerProcess
from memstore.wire.transport import Transport

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "rules" / "identity.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
VALID = [c for c in CASES if "canonical" in c]
INVALID = [c for c in CASES if "error" in c]
HASHING = {"embedder": {"provider": "hashing"}}
COUNTS: dict[str, dict[str, int]] = {}      # door -> {"stored": n, "refused": n}; printed at the end


def _count(door: str, what: str) -> None:
    COUNTS.setdefault(door, {}).setdefault(what, 0)
    COUNTS[door][what] += 1


def _marker(door: str, i: int) -> str:
    return f"zq{door}{i}x{secrets.token_hex(4)}"


def _fact(i: int) -> str:
    """A sentence MCP's add_memory (which extracts) stores as one fact, unique per call."""
    return f"I bought {i + 2} paper kites at the harbour on day {secrets.randbelow(10**6)}"


# -- the rule itself ----------------------------------------------------------------------------
def test_golden_cases_cover_what_the_issue_names():
    names = " ".join(c["case"] for c in CASES)
    for word in ("leading space", "tab", "NFD", "NFC", "mixed case", "confusable", "control", "zero-width",
                 "longer than"):
        assert word in names, word
    assert len({c["canonical"] for c in VALID}) < len(VALID)        # several spellings of one id


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_rule(case):
    if "error" in case:
        with pytest.raises(IdentityError):
            canonical_id(case["given"])
        assert not is_canonical(case["given"])
        return
    got = canonical_id(case["given"])
    assert got == case["canonical"] and is_canonical(got) and canonical_id(got) == got
    assert unicodedata.is_normalized("NFC", got) and len(got) <= MAX_ID_CHARS
    assert placement_key({"user_id": case["given"], "agent_id": "a"}) == got
    assert confine_scope({"user_id": case["given"]}, {"user_id": got}, refuse=LookupError) == {"user_id": got}


def test_confinement_compares_canonical_forms_and_keeps_case():
    assert confine_scope({"user_id": "\tJose\u0301 "}, {"user_id": "Jos\u00e9"}, refuse=LookupError) == {
        "user_id": "Jos\u00e9"}
    for other in ("Pad0", "\u0440ad0", "\uff50ad0"):
        with pytest.raises(LookupError):
            confine_scope({"user_id": other}, {"user_id": "pad0"}, refuse=LookupError)
    with pytest.raises(IdentityError):          # an invalid id is the id's fault, not another scope
        confine_scope({"user_id": "pad\u200b0"}, {"user_id": "pad0"}, refuse=LookupError)


# -- door 1: the library ------------------------------------------------------------------------
def test_library_door(tmp_path):
    with Memory(str(tmp_path / "lib.duckdb"), config=HASHING) as m:
        for i, case in enumerate(CASES):
            text = _marker("lib", i)
            if "error" in case:
                with pytest.raises(IdentityError):
                    m.add(text, user_id=case["given"], infer=False)
                with pytest.raises(IdentityError):
                    m.get_all(user_id=case["given"])
                _count("library", "refused")
                continue
            mid = m.add(text, user_id=case["given"], infer=False)["results"][0]["id"]
            assert m.get(mid)["user_id"] == case["canonical"]
            for spelling in (case["given"], case["canonical"]):
                assert mid in {r["id"] for r in m.get_all(user_id=spelling)["results"]}
                assert mid in {r["id"] for r in m.get_all(filters={"user_id": spelling})["results"]}
                assert m.get(mid, user_id=spelling)["id"] == mid
            _count("library", "stored")
        stored = m.sql("SELECT DISTINCT user_id FROM memories")["user_id"].to_list()
        assert sorted(stored) == sorted({c["canonical"] for c in VALID})      # only canonical forms are stored
        assert m.sql("SELECT count(*) AS n FROM memories")["n"][0] == len(VALID)
        # mixed case and confusables are other users: forgetting pad0 leaves them
        m.forget(user_id=" pad0")
        left = set(m.sql("SELECT DISTINCT user_id FROM memories")["user_id"].to_list())
        assert "pad0" not in left and {"Pad0", "\u0440ad0", "\uff50ad0"} <= left


# -- doors 2-5: served ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A plain server (scoped tokens, MCP over HTTP, MCP stdio through it) and one with a front."""
    base = tmp_path_factory.mktemp("doors")
    with ServerProcess(base / "one.duckdb", config=HASHING) as one, \
            ServerProcess(base / "front.duckdb", config=HASHING, args=["--fronts", "1"]) as front:
        yield one, front


def _rest(srv: ServerProcess, token: str) -> Transport:
    return Transport(srv.url, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})


def _add(t: Transport, text: str, **scope: str) -> tuple[int, dict]:
    status, _, body = t.request("POST", "/memories", json.dumps(
        {"messages": [{"role": "user", "content": text}], "infer": False, **scope}))
    return status, json.loads(body)


def _users_of(srv: ServerProcess) -> list[str]:
    with srv.client() as c:
        return c.sql("SELECT user_id FROM memories ORDER BY user_id")["user_id"].to_list()


def test_server_with_a_scoped_token(served):
    srv, _ = served
    admin = srv.client()
    before = len(_users_of(srv))
    for i, case in enumerate(VALID):
        token = admin.create_token(f"golden-{i}", user_id=case["given"])["token"]    # the token's scope: canonical
        t = _rest(srv, token)
        status, body = _add(t, _marker("tok", i), user_id=case["given"])
        assert status == 200, body
        mid = body["results"][0]["id"]
        assert admin.get(mid)["user_id"] == case["canonical"]
        status, body = _add(t, _marker("tokfill", i))                               # no user: the token's
        assert status == 200 and admin.get(body["results"][0]["id"])["user_id"] == case["canonical"]
        status, _, raw = t.request("GET", "/memories?user_id=" + quote(case["canonical"], safe=""))
        assert status == 200 and mid in {r["id"] for r in json.loads(raw)["results"]}
        _count("server+scoped token", "stored")
    pad0 = _rest(srv, admin.create_token("golden-pad0", user_id="pad0")["token"])
    for other in ("Pad0", "\u0440ad0", "\uff50ad0"):            # look-alikes are other scopes: not found
        status, body = _add(pad0, "not mine", user_id=other)
        assert status == 404 and body["error"]["type"] == "NotFoundError", body
    for i, case in enumerate(INVALID):
        status, body = _add(pad0, _marker("tokbad", i), user_id=case["given"])
        assert status == 400 and body["error"]["type"] == "IdentityError", (case, body)
        status, _, raw = _rest(srv, srv.token).request("POST", "/v1/create_token", json.dumps(
            {"args": [f"bad-{i}"], "kwargs": {"user_id": case["given"]}}))
        assert status == 400 and json.loads(raw)["error"]["type"] == "IdentityError", raw
        _count("server+scoped token", "refused")
    assert len(_users_of(srv)) == before + 2 * len(VALID)                           # nothing else stored


def test_front(served):
    _, srv = served
    t = _rest(srv, srv.token)
    admin = srv.client()
    for i, case in enumerate(CASES):
        status, body = _add(t, _marker("front", i), user_id=case["given"])
        if "error" in case:
            assert status == 400 and body["error"]["type"] == "IdentityError", (case, body)
            status, _, raw = t.request("POST", "/v1/add", json.dumps(
                {"args": ["x"], "kwargs": {"user_id": case["given"], "infer": False}}))
            assert status == 400 and json.loads(raw)["error"]["type"] == "IdentityError", raw
            _count("front", "refused")
            continue
        assert status == 200, body
        assert admin.get(body["results"][0]["id"])["user_id"] == case["canonical"]
        _count("front", "stored")
    assert sorted(set(_users_of(srv))) == sorted({c["canonical"] for c in VALID})


def test_mcp_over_http(served):
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memstore.integrations.mcp_server import result_json

    srv, _ = served
    admin = srv.client()

    def client(path: str) -> Client:
        return Client(streamable_http_client(srv.url + path, http_client=httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {srv.token}"}, timeout=httpx2.Timeout(60.0, read=300.0))))

    async def run() -> list[str]:
        ids = []
        for i, case in enumerate(VALID):
            async with client("/mcp/golden/" + quote(case["given"], safe="")) as c:
                out = result_json(await c.call_tool("add_memory", {"text": _fact(i)}))
                assert isinstance(out, dict), (case, out)
                ids.append(out["results"][0]["id"])
        return ids

    ids = asyncio.run(asyncio.wait_for(run(), 300))
    for mid, case in zip(ids, VALID):
        assert admin.get(mid)["user_id"] == case["canonical"]
        _count("MCP HTTP", "stored")
    t = _rest(srv, srv.token)
    for case in INVALID:
        status, _, raw = t.request("POST", "/mcp/golden/" + quote(case["given"], safe=""), json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            headers={"Accept": "application/json, text/event-stream"})
        assert status == 400 and json.loads(raw)["error"] == "IdentityError", (case, raw)
        _count("MCP HTTP", "refused")


def _stdio(store: str, user: str) -> object:
    from mcp import StdioServerParameters

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return StdioServerParameters(command=sys.executable, args=["-m", "memstore.cli", "mcp", "--store", store,
                                                               "--user", user, "--client", "golden"], env=env)


def test_mcp_over_stdio(served):
    pytest.importorskip("mcp")
    from mcp import Client

    from memstore.integrations.mcp_server import result_json

    srv, _ = served
    admin = srv.client()
    # one stdio server per spelling class (starting one costs seconds): padded, tab, NFD, confusable, case
    picked = [c for c in VALID if c["case"] in ("leading space", "tab-prefixed", "NFD accent, padded",
                                               "mixed case is another user", "Cyrillic confusable is another user")]

    async def run() -> list[tuple[dict, str]]:
        out = []
        for i, case in enumerate(picked):
            async with Client(_stdio(srv.store, case["given"])) as c:
                added = result_json(await c.call_tool("add_memory", {"text": _fact(100 + i)}))
                mine = await c.call_tool("get_memories", {"filters": {"user_id": case["given"]}})
                out.append((case, added["results"][0]["id"]))
                assert not mine.is_error
        return out

    for case, mid in asyncio.run(asyncio.wait_for(run(), 300)):
        assert admin.get(mid)["user_id"] == case["canonical"]
        _count("MCP stdio", "stored")
    for case in INVALID[:4]:
        proc = subprocess.run([sys.executable, "-m", "memstore.cli", "mcp", "--store", srv.store, "--user",
                               case["given"]], input=b"", capture_output=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert proc.returncode != 0 and b"error:" in proc.stderr and b"Traceback" not in proc.stderr, proc.stderr
        _count("MCP stdio", "refused")


def test_zz_print_counts():
    """The figures of the note: answers per door (run with -s to see them)."""
    print("\nscope rule, golden cases per door:", json.dumps(COUNTS, sort_keys=True))
    assert COUNTS
