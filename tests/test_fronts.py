"""`memstore serve --fronts N`: front processes take the HTTP, the adds' model work and the
query's vector; the owner authenticates, commits and searches (memstore/server/fronts.py).

Real servers (subprocesses), real stores: the same calls through fronts and through one process
(`--fronts 0 --workers 0`) store and find the same things, tokens are checked by the owner on every
call that a front passes, and the routes a front does not serve itself reach the owner unchanged.
(The 8-client load and SIGKILL of a front mid-load are in tests/test_server_load.py.)"""
from __future__ import annotations

import concurrent.futures as cf
import os
import time

import pytest

from memstore.api.http_client import MemoryClient
from memstore.core.errors import AuthError, MemstoreError, NotFoundError, TokenRightsError
from memstore.testing.server_process import ServerProcess
from memstore.wire.transport import Transport
from tests.test_workers import CONFIG, TURNS

QUERIES = [("ana", "where does ana live"), ("bo", "what games does bo play"), ("ana", "who is Maria")]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One server with two fronts and one with none, on two fresh stores."""
    base = tmp_path_factory.mktemp("fronts")
    with ServerProcess(base / "fronts.duckdb", config=CONFIG, args=["--fronts", "2"]) as fronts, \
            ServerProcess(base / "one.duckdb", config=CONFIG, args=["--workers", "0"]) as one:
        yield fronts, one


def _run(client):
    outs = [client.add(text, user_id=user, timestamp=f"2024-01-0{i + 1}T10:00") for i, (user, text) in enumerate(TURNS)]
    outs.append(client.add("raw note kept as it is", user_id="bo", infer=False))
    found = [client.search(q, user_id=u, top_k=5) for u, q in QUERIES]
    rows = client.sql("select user_id, memory, slot, slot_value, superseded_by is not null from memories "
                      "where user_id in ('ana', 'bo') order by all").rows()
    return outs, found, rows


def test_fronts_store_and_find_what_one_process_does(servers):
    fronts, one = servers
    info = fronts.client().server_info()
    assert len(info["front_pids"]) == 2 and info["pid"] not in info["front_pids"] and info["workers"] == 0
    outs_f, found_f, rows_f = _run(fronts.client())
    outs_1, found_1, rows_1 = _run(one.client())
    assert [[(r["memory"], r["event"]) for r in o["results"]] for o in outs_f] == \
           [[(r["memory"], r["event"]) for r in o["results"]] for o in outs_1]
    ranked = [[sorted((-round(r["score"], 6), r["memory"]) for r in f["results"]) for f in found]
              for found in (found_f, found_1)]       # equal scores rank by id: random ids, any order
    assert ranked[0] == ranked[1] and ranked[0][0][0][0] < 0
    assert len(rows_f) >= 8 and any(r[4] for r in rows_f) and rows_f == rows_1     # slots, supersession


def test_several_clients_at_once_store_what_one_process_does(servers):
    # each query's number is in one text only (no "note 23" beside "parcel 23"): the adds arrive in
    # any order, and a tie broken by add order (recency, neighbours) would differ between the servers
    texts = [f"the parcel {100 + i * 37 % 101} is in locker {i % 13}" for i in range(24)]

    def load(client):
        with cf.ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: client.add(texts[i], user_id=f"many-{i % 3}", infer=False), range(len(texts))))
            found = list(pool.map(lambda i: client.search(f"parcel {100 + i * 37 % 101}", user_id=f"many-{i % 3}",
                                                          top_k=3), range(len(texts))))
        stored = client.sql("select user_id, memory from memories where user_id like 'many-%' order by all").rows()
        return stored, [f["results"][0]["memory"] for f in found]     # below the top: recency (add order)

    assert load(servers[0].client()) == load(servers[1].client())


def test_health_counts_the_owners_groups_and_side_door_messages(servers):
    """/health shows how many adds a group held and what the owner's commits and messages cost
    (bench/server.py prints them as adds a group and CPU per add)."""
    client = servers[0].client()
    before = client.server_info()
    with cf.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: client.add(f"the lamp {i} is in room {i}", user_id="health", infer=False), range(6)))
    after = client.server_info()
    g0, g1 = before.get("group_commit", {}), after["group_commit"]
    o0, o1 = before.get("owner_ops", {}), after["owner_ops"]
    assert g1["adds"] - g0.get("adds", 0) == 6 and 1 <= g1["groups"] - g0.get("groups", 0) <= 6
    assert g1["cpu_ms"] > g0.get("cpu_ms", 0)
    assert o1["commit"] - o0.get("commit", 0) == 6 and o1["admit"] - o0.get("admit", 0) >= 6
    assert o1["commit_ms"] > o0.get("commit_ms", 0)
    assert "group_commit" in servers[1].client().server_info()       # one process: its committer too


def test_the_owner_checks_every_token_a_front_passes(servers):
    srv = servers[0]
    admin = srv.client()
    admin.add("Bob keeps bees", user_id="bob", infer=False)
    alice_tok = admin.create_token("alice-laptop", user_id="alice")["token"]
    ro_tok = admin.create_token("alice-ro", user_id="alice", read_only=True)["token"]
    alice = MemoryClient(srv.url, token=alice_tok)
    out = alice.add("I grow tomatoes", infer=False)                       # the scope comes from the token
    assert [r["memory"] for r in out["results"]] == ["I grow tomatoes"]
    assert admin.history(out["results"][0]["id"])[0]["actor_id"] == "token:alice-laptop"
    assert [r["memory"] for r in alice.search("tomatoes")["results"]] == ["I grow tomatoes"]
    with pytest.raises(NotFoundError):
        alice.search("bees", user_id="bob")                               # another scope: as if unknown
    with pytest.raises(NotFoundError):
        alice.add("I keep bees too", user_id="bob")
    with pytest.raises(TokenRightsError):
        MemoryClient(srv.url, token=ro_tok).add("I read only", infer=False)
    with pytest.raises(AuthError):
        MemoryClient(srv.url, token="not-a-token").search("bees", user_id="bob")
    admin.revoke_token("alice-laptop")
    with pytest.raises(AuthError):                                        # revoked: refused at once
        alice.search("tomatoes")


def test_errors_keep_the_owners_envelope_and_status(servers):
    fronts, one = servers
    for srv in (fronts, one):
        t = Transport(srv.url)
        auth = {"Authorization": f"Bearer {srv.token}", "Content-Type": "application/json"}
        status, _, body = t.request("POST", "/v1/add", b'{"kwargs": {"messages": "x", "nope": 1}}', auth)
        assert status == 400 and b'"ArgumentError"' in body, body
        status, _, body = t.request("POST", "/v1/search", b'{"kwargs": {"query": "x"}}', {})     # no token
        assert status == 401 and b'"AuthError"' in body, body
        status, _, body = t.request("POST", "/v1/search", b"not json", {"Authorization": "Bearer wrong"})
        assert status == 401, body                                         # the token is checked first
        status, _, _ = t.request("GET", "/docs")
        assert status == 200
    for bad in ([], [{"role": "user"}], {"role": "user", "content": "hi", "name": 3}, [{"content": 5}]):
        kinds = []
        for srv in (fronts, one):
            with pytest.raises(MemstoreError) as err:
                srv.client().add(bad, user_id="ana")
            kinds.append((type(err.value).__name__, str(err.value)))
        assert kinds[0] == kinds[1], bad


def test_a_front_passes_other_routes_to_the_owner(servers):
    srv = servers[0]
    m = srv.client()
    mid = m.add("I like green tea", user_id="passed", infer=False)["results"][0]["id"]
    assert m.get(mid)["memory"] == "I like green tea"                    # GET /v1/get, forwarded
    m.update(mid, text="I like black tea")
    assert [r["memory"] for r in m.get_all(user_id="passed")["results"]] == ["I like black tea"]
    t = Transport(srv.url)
    status, headers, body = t.request("GET", "/memories", params={"user_id": "passed"},
                                      headers={"Authorization": f"Bearer {srv.token}"})
    assert status == 200 and b"black tea" in body


def test_an_llm_extractor_reads_its_context_through_the_owner(tmp_path):
    """With an LLM extractor a front asks the owner for the context (recent messages, related
    memories: they are in the store) and has a failed LLM call recorded there, as add() does."""
    from memstore.testing.openai_server import ScriptedOpenAIServer

    answers = iter(['{"facts": [{"text": "Ana lives in Lisbon", "attributed_to": "Ana"}]}',
                    '{"facts": [{"text": "Ana moved to Porto", "attributed_to": "Ana"}]}'])
    with ScriptedOpenAIServer(chat_responder=lambda body: next(answers)) as llm:
        config = {"llm": {"provider": "openai", "base_url": llm.base_url, "api_key": "test", "model": "scripted-model",
                          "max_retries": 0, "timeout": 5}, "embedder": {"provider": "hashing"}}
        with ServerProcess(tmp_path / "llm.duckdb", config=config, args=["--fronts", "1"]) as srv:
            m = srv.client()
            assert [r["memory"] for r in m.add("I live in Lisbon", user_id="ana")["results"]] == ["Ana lives in Lisbon"]
            m.add("I moved to Porto last week", user_id="ana")
            llm.push_error(500, "the model is down")
            with pytest.raises(MemstoreError) as err:
                m.add("I have a cat", user_id="ana")
            failed = m.sql("select count(*) from extraction_runs where status = 'llm_error'").rows()
        prompts = [r["json"]["messages"][-1]["content"] for r in llm.requests if r["path"].endswith("/chat/completions")]
    assert "I live in Lisbon" in prompts[1] and "Ana lives in Lisbon" in prompts[1]   # message and memory
    assert getattr(err.value, "retryable", None) is not None and failed == [(1,)]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:      # a zombie is gone too
        return fh.read().split(") ")[-1][:1] != "Z"


def test_fronts_leave_with_the_owner(tmp_path):
    """SIGTERM stops the fronts with the owner; SIGKILL of the owner: they leave by themselves."""
    srv = ServerProcess(tmp_path / "stop.duckdb", config=CONFIG, args=["--fronts", "1"]).start()
    fronts = srv.client().server_info()["front_pids"]
    assert srv.stop() == 0
    assert not any(_alive(p) for p in fronts)
    srv = ServerProcess(tmp_path / "stop.duckdb", config=CONFIG, args=["--fronts", "1"]).start()
    fronts = srv.client().server_info()["front_pids"]
    srv.kill()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in fronts) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in fronts)


def test_the_owner_runs_duckdb_on_one_thread_unless_config_says(tmp_path):
    from memstore import Memory
    from memstore.server.serve import OWNER_THREADS, owner_threads

    for given, want in ((None, OWNER_THREADS), (2, 2)):
        m = Memory(tmp_path / f"t{given}.duckdb", config={"embedder": {"provider": "hashing"}, "threads": given})
        try:
            assert owner_threads(m) == want
            assert m.db.scalar("SELECT current_setting('threads')") == want
        finally:
            m.close()
