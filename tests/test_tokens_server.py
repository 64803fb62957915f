"""Scoped tokens against a real `memstore serve` subprocess: the CLI through the running server,
MCP over HTTP bound to the token's user, revocation in the middle of a 4-client load, and the
clear token never in the store file or the server's log."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest

from memstore import Memory
from memstore.api.http_client import MemoryClient
from memstore.core.errors import AuthError, NotFoundError, TokenRightsError
from memstore.governance.api_tokens import hash_token
from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memstore.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    store = str(tmp_path_factory.mktemp("tok") / "s.duckdb")
    with Memory(store, config=CONFIG) as m:
        bob_id = m.add("My locker code is 4411", user_id="bob", infer=False)["results"][0]["id"]
        offline = m.create_token("alice-laptop", user_id="alice")["token"]      # made before the server runs
    with ServerProcess(store, config=CONFIG) as srv:
        yield srv, store, bob_id, offline


def test_cli_goes_through_the_running_server_and_the_token_is_never_stored_or_logged(served):
    srv, store, bob_id, offline = served
    made = _cli("token", "create", "--store", store, "--user", "alice", "--read-only", "--name", "alice-ro",
                "--expires", "30d")
    assert made.returncode == 0, made.stderr
    ro = made.stdout.strip()
    assert ro.startswith("mst_") and "shown once" in made.stderr
    with MemoryClient(srv.url, token=ro) as alice_ro, MemoryClient(srv.url, token=offline) as alice:
        mid = alice.add("I keep bees on the roof", infer=False)["results"][0]["id"]
        assert [r["memory"] for r in alice_ro.get_all()["results"]] == ["I keep bees on the roof"]
        with pytest.raises(TokenRightsError):
            alice_ro.add("I should not be stored", infer=False)
        with pytest.raises(NotFoundError):
            alice.get(bob_id)
        with pytest.raises(TokenRightsError):
            alice.sql("SELECT * FROM memories")
        assert alice.history(mid)[0]["actor_id"] == "token:alice-laptop"
    listed = _cli("token", "list", "--store", store)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert set(rows) == {"alice-laptop", "alice-ro"} and "read-only" in rows["alice-ro"]
    assert rows["alice-laptop"].split()[4] != "-"          # last used: written before the listing
    revoked = _cli("token", "revoke", "--store", store, "alice-ro")
    assert revoked.returncode == 0, revoked.stderr
    with MemoryClient(srv.url, token=ro) as alice_ro, pytest.raises(AuthError):
        alice_ro.get_all()
    assert ro not in srv.log() and offline not in srv.log()


def test_mcp_over_http_takes_the_user_from_the_token_and_refuses_another_in_the_url(served):
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memstore.integrations.mcp_server import result_json

    srv, store, bob_id, alice_token = served
    with MemoryClient(srv.url, token=srv.token) as admin:
        ro_token = admin.create_token("bob-ro", user_id="bob", read_only=True)["token"]

    def client(path: str, token: str):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(60.0, read=300.0))
        return Client(streamable_http_client(srv.url + path, http_client=http))

    async def session() -> dict:
        seen: dict = {}
        async with client("/mcp/cursor/alice", alice_token) as c:
            seen["added"] = result_json(await c.call_tool("add_memory", {"text": "I fly gliders on Sundays"}))
            seen["found"] = result_json(await c.call_tool("search_memories", {"query": "gliders"}))
            seen["x_get"] = await c.call_tool("get_memory", {"memory_id": bob_id})
        async with client("/mcp", alice_token) as c:          # no user in the URL: the token's
            seen["plain"] = result_json(await c.call_tool("list_memories", {}))
        async with client("/mcp/cursor/bob", ro_token) as c:
            seen["ro_list"] = result_json(await c.call_tool("list_memories", {}))
            seen["ro_add"] = await c.call_tool("add_memory", {"text": "I should not be stored"})
        return seen

    seen = asyncio.run(asyncio.wait_for(session(), 120))
    assert "gliders" in seen["found"]["results"][0]["memory"]
    assert seen["x_get"].is_error and "4411" not in str(seen["x_get"].content)
    assert any("gliders" in r["memory"] for r in seen["plain"]["results"])
    assert not any("4411" in r["memory"] for r in seen["plain"]["results"])
    assert [r["memory"] for r in seen["ro_list"]["results"]] == ["My locker code is 4411"]
    assert seen["ro_add"].is_error and "read-only" in str(seen["ro_add"].content)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "authorization": f"Bearer {alice_token}"}
    refused = httpx.post(f"{srv.url}/mcp/cursor/bob", json=init, headers=headers)
    unknown = httpx.post(f"{srv.url}/mcp/cursor/nobody-at-all", json=init, headers=headers)
    assert refused.status_code == unknown.status_code == 404
    assert refused.json()["message"].replace("bob", "X") == unknown.json()["message"].replace("nobody-at-all", "X")
    assert httpx.post(f"{srv.url}/mcp/cursor/alice", json=init, headers=headers).status_code == 200


def test_revoking_a_token_during_a_load_of_four_clients(served):
    """Four clients search and add with their own tokens; one token is revoked through the server.
    Every request of that client that starts after the revocation returns fails with AuthError;
    the other three never see an error."""
    srv, store, _, _ = served
    with MemoryClient(srv.url, token=srv.token) as admin:
        tokens = [admin.create_token(f"load-{i}", user_id=f"load-user-{i}")["token"] for i in range(4)]
    stop = threading.Event()
    log: list[list[tuple[float, str]]] = [[] for _ in range(4)]

    def work(i: int) -> None:
        with MemoryClient(srv.url, token=tokens[i]) as m:
            n = 0
            while not stop.is_set():
                start = time.monotonic()
                try:
                    if n % 3 == 0:
                        m.add(f"load note {i}-{n}", infer=False)
                    else:
                        m.search("load note", top_k=3)
                    log[i].append((start, "ok"))
                except AuthError:
                    log[i].append((start, "auth"))
                except Exception as exc:
                    log[i].append((start, repr(exc)))
                n += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while min(len(x) for x in log) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    with MemoryClient(srv.url, token=srv.token) as admin:
        admin.revoke_token("load-0")
    revoked_at = time.monotonic()
    while (len([s for s, _ in log[0] if s > revoked_at]) < 3 or
           min(len([s for s, _ in x if s > revoked_at]) for x in log[1:]) < 5) and time.monotonic() < deadline + 60:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(60)
    after = [what for start, what in log[0] if start > revoked_at]
    assert after and set(after) == {"auth"}, after
    assert [what for start, what in log[0] if start < revoked_at - 5] == \
        ["ok"] * len([1 for start, _ in log[0] if start < revoked_at - 5])
    for i in (1, 2, 3):
        assert {what for _, what in log[i]} == {"ok"}, log[i][-3:]
        assert len([1 for start, _ in log[i] if start > revoked_at]) >= 5


def test_the_clear_token_is_not_in_the_store_file(tmp_path):
    store = str(tmp_path / "h.duckdb")
    with Memory(store, config=CONFIG) as m:
        made = m.create_token("t1", user_id="alice")
    raw = b"".join(open(p, "rb").read() for p in (store, store + ".wal") if os.path.exists(p))
    assert made["token"].encode() not in raw
    assert hash_token(made["token"]).encode() in raw
