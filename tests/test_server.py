"""`memstore serve` as users meet it: discovery, refusals, the token, the analyst switch, mem0's
REST paths, and a CLI that stays light when a server runs. Real server subprocesses on 127.0.0.1."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from memstore import Memory, connect
from memstore.api.http_client import MemoryClient
from memstore.core.errors import AuthError, ConfigError, StoreLockedError
from memstore.server.serve import check_serve
from memstore.testing.server_process import ServerProcess, free_port
from memstore.wire.discovery import read_info, server_file
from memstore.wire.transport import Transport

CONFIG = {"embedder": {"provider": "hashing"}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("srv") / "team.duckdb", config=CONFIG) as srv:
        yield srv


def _http(server, method, path, body=None, token="default", params=None):
    tok = server.token if token == "default" else token
    t = Transport(server.url, headers={"Authorization": f"Bearer {tok}"} if tok else {})
    status, headers, data = t.request(method, path, json.dumps(body) if body is not None else None,
                                      headers={"Content-Type": "application/json"}, params=params)
    return status, json.loads(data) if data else None


def test_memory_on_a_served_path_is_a_client(server):
    info = read_info(server.store)
    assert info["url"] == server.url and info["pid"] == server.proc.pid
    assert oct(os.stat(server_file(server.store)).st_mode & 0o777) == "0o600"
    m = Memory(server.store)
    assert isinstance(m, MemoryClient)
    m.add("I live in Porto", user_id="disc", infer=False)
    assert [r["memory"] for r in connect(server.url, token=server.token).get_all(user_id="disc")["results"]] == \
        ["I live in Porto"]
    with pytest.raises(AuthError):              # a bare URL has no token unless $MEMSTORE_TOKEN is set
        Memory(server.url).get_all(user_id="disc")


def test_a_second_server_on_the_same_store_is_refused(server):
    with pytest.raises(StoreLockedError) as err:
        check_serve(server.store, "127.0.0.1", tls=False)
    assert server.url in str(err.value)
    out = subprocess.run([sys.executable, "-m", "memstore.cli", "serve", "--store", server.store,
                          "--port", str(free_port())], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and server.url in out.stderr and "Traceback" not in out.stderr


def test_non_loopback_plain_http_is_refused(tmp_path):
    with pytest.raises(ConfigError) as err:
        check_serve(str(tmp_path / "x.duckdb"), "0.0.0.0", tls=False)
    assert "TLS" in str(err.value) or "ssl" in str(err.value)


def test_token_is_required(server):
    status, body = _http(server, "POST", "/v1/get_all", {"kwargs": {"user_id": "x"}}, token=None)
    assert status == 401 and body["error"]["type"] == "AuthError"
    status, body = _http(server, "POST", "/v1/get_all", {"kwargs": {"user_id": "x"}}, token="wrong")
    assert status == 401
    with pytest.raises(AuthError):
        MemoryClient(server.url, token="wrong").get_all(user_id="x")
    status, body = _http(server, "GET", "/health", token=None)     # says only what it is
    assert status == 200 and body["service"] == "memstore" and "memories" not in json.dumps(body)
    status, spec = _http(server, "GET", "/openapi.json", token=None)
    assert status == 200 and "/memories" in spec["paths"] and "/v1/search" in spec["paths"]


def test_mem0_rest_paths_and_shapes(server):
    st, out = _http(server, "POST", "/memories", {"messages": [{"role": "user", "content": "I live in Oslo"}],
                                                  "user_id": "m0"})
    assert st == 200 and out["results"][0]["event"] == "ADD" and "Oslo" in out["results"][0]["memory"]
    mid = out["results"][0]["id"]
    st, out = _http(server, "GET", "/memories", params={"user_id": "m0"})
    assert st == 200 and [r["id"] for r in out["results"]] == [mid]
    st, out = _http(server, "GET", f"/memories/{mid}")
    assert st == 200 and out["id"] == mid and out["user_id"] == "m0" and "hash" in out and "metadata" in out
    st, out = _http(server, "POST", "/search", {"query": "Oslo", "user_id": "m0"})
    assert st == 200 and out["results"][0]["id"] == mid and 0 <= out["results"][0]["score"] <= 1
    st, out = _http(server, "PUT", f"/memories/{mid}", {"text": "M0 lives in Bergen"})
    assert st == 200 and "updated" in out["message"].lower()
    st, out = _http(server, "GET", f"/memories/{mid}/history")
    assert st == 200 and [h["event"] for h in out][:2] == ["ADD", "UPDATE"]
    st, out = _http(server, "DELETE", f"/memories/{mid}")
    assert st == 200 and out["message"] == "Memory deleted successfully"
    st, out = _http(server, "GET", f"/memories/{mid}")
    assert st == 404 and out["error"]["type"] == "NotFoundError"
    _http(server, "POST", "/memories", {"messages": [{"role": "user", "content": "I like jazz"}], "user_id": "m0"})
    st, out = _http(server, "DELETE", "/memories", params={"user_id": "m0"})
    assert st == 200 and out["message"] == "All relevant memories deleted"
    st, out = _http(server, "GET", "/memories", params={"user_id": "m0"})
    assert out["results"] == []
    st, out = _http(server, "POST", "/memories", {"messages": [{"role": "user", "content": "hi"}]})
    assert st == 400 and out["error"]["type"] == "IdentityError"


def test_no_analyst_api_refuses_cross_scope_methods(tmp_path):
    with ServerProcess(tmp_path / "a.duckdb", config=CONFIG, args=["--no-analyst-api"]) as srv:
        m = srv.client()
        m.add("I like tea", user_id="ana", infer=False)
        assert m.frame("memories", user_id="ana").height == 1          # scoped: allowed
        for call in (lambda: m.sql("select * from memories"), lambda: m.frame("memories"),
                     lambda: m.search_all("tea"), lambda: m.reset(), lambda: m.doctor()):
            with pytest.raises(AuthError):
                call()
        st, _ = _http(srv, "POST", "/reset")
        assert st == 401 or st == 403
        assert m.get_all(user_id="ana")["results"]                       # nothing was reset


def test_a_store_held_by_a_plain_process_says_who_holds_it(tmp_path):
    store = str(tmp_path / "held.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({store!r}); print("ready", flush=True); time.sleep(60)""")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as err:
            Memory(store, config=CONFIG)
        text = str(err.value)
        assert str(holder.pid) in text and "memstore serve --store" in text
        out = subprocess.run([sys.executable, "-m", "memstore.cli", "list", "--user", "a", "--store", store],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 1 and str(holder.pid) in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    finally:
        holder.kill()


def test_a_stale_announcement_is_ignored(tmp_path):
    store = str(tmp_path / "stale.duckdb")
    with ServerProcess(store, config=CONFIG) as srv:
        srv.client().add("I like rain", user_id="s", infer=False)
        srv.kill()                                    # SIGKILL: the announcement stays behind
    assert os.path.exists(server_file(store))
    m = Memory(store, config=CONFIG)                  # dead pid: opens the file itself
    assert not isinstance(m, MemoryClient)
    assert [r["memory"] for r in m.get_all(user_id="s")["results"]] == ["I like rain"]
    m.close()
    with ServerProcess(store, config=CONFIG) as srv:  # a new server replaces the stale file
        assert read_info(store)["pid"] == srv.proc.pid


def test_cli_against_a_server_does_not_load_the_models(server):
    code = textwrap.dedent(f"""
        import sys
        from memstore.cli import main
        rc = main(["search", "Porto", "--user", "disc", "--store", {server.store!r}])
        heavy = sorted(m for m in ("spacy", "onnxruntime", "duckdb", "polars", "tokenizers") if m in sys.modules)
        print("HEAVY", heavy, rc)""")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY [] 0" in out.stdout, out.stdout + out.stderr
    assert "Porto" in out.stdout


def test_read_commands_do_not_create_a_store(tmp_path):
    store = str(tmp_path / "nothere.duckdb")
    out = subprocess.run([sys.executable, "-m", "memstore.cli", "search", "x", "--user", "a", "--store", store],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "no store at" in out.stderr and not os.path.exists(store)


def test_a_server_that_is_still_starting_is_waited_for(tmp_path):
    """Between owning the file and listening (models loading) a server announces state 'starting':
    clients wait for it instead of failing on the file lock."""
    from memstore.api.connect import client_for

    store = str(tmp_path / "starting.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, time
        from memstore.wire.discovery import write_info
        con = duckdb.connect({store!r})
        write_info({store!r}, "http://127.0.0.1:9", state="starting")
        print("ready", flush=True); time.sleep(60)""")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as err:          # an embedded open names it a starting server
            Memory(store, config=CONFIG, embedded=True)
        assert "still starting" in str(err.value) and str(holder.pid) in str(err.value)
        import memstore.api.connect as connect_mod
        old, connect_mod.STARTING_WAIT_S = connect_mod.STARTING_WAIT_S, 0.5
        try:
            assert client_for(store) is None                  # gave up after the wait: not a live server
        finally:
            connect_mod.STARTING_WAIT_S = old
    finally:
        holder.kill()
        holder.wait()


def test_memstore_ui_starts_a_server_for_the_dashboard_and_reuses_a_running_one(tmp_path):
    from memstore.cli.ui import ensure_server

    store = str(tmp_path / "ui.duckdb")
    Memory(store, embedded=True).close()              # the default config, as `memstore ui` serves it
    proc = ensure_server(store)                       # none runs: one is started for the dashboard
    try:
        assert proc is not None and read_info(store)["pid"] == proc.pid
        assert isinstance(Memory(store), MemoryClient)
        assert ensure_server(store) is None           # a running one is used, not a second one started
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not os.path.exists(server_file(store))     # the announcement goes with the server
