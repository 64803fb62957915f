"""Many shards behind HAProxy (issue 28), with real processes: shard servers (`memstore serve
--shard i/N`) and HAProxy on 127.0.0.1, load from separate client processes of three kinds (the
Python client, raw mem0 REST, MCP over HTTP), kill -9 of a shard, and a rebalance 2 -> 3 that is
itself killed and re-run."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
import zlib

import pytest

from memstore.api.cluster_client import ClusterClient, route_key
from memstore.cluster.haproxy import haproxy_config
from memstore.cluster.shard_guard import ShardGuard
from memstore.core.errors import ConfigError, CrossShardError, WrongShardError
from memstore.core.placement import SLOTS, jump_hash, parse_shard, shard_of, shard_of_key, slot_of, slot_table
from memstore.testing.cluster_process import ClusterProcess, haproxy_available

HASHING = {"embedder": {"provider": "hashing"}}
needs_haproxy = pytest.mark.skipif(not haproxy_available(), reason="haproxy is not installed (.ci/run installs it)")


# -- placement: a pure function ---------------------------------------------------------------------
def test_placement_is_crc32_slot_then_jump_hash():
    for key in ("alice", "bob", "zoë", "用户-7", ""):
        assert slot_of(key) == zlib.crc32(key.encode()) % SLOTS
    assert shard_of({"user_id": "alice", "agent_id": "bot"}, 3) == shard_of_key("alice", 3)
    assert shard_of({"agent_id": "bot", "run_id": "r"}, 3) == shard_of_key("bot", 3)
    assert shard_of({"run_id": "r"}, 3) == shard_of_key("r", 3)
    assert shard_of({}, 3) is None
    assert all(jump_hash(k, 1) == 0 for k in range(100))


def test_growing_moves_only_slots_to_the_new_shard_and_about_one_in_m():
    for n, m in ((1, 2), (2, 3), (3, 4), (4, 7)):
        moved = [s for s in range(SLOTS) if jump_hash(s, n) != jump_hash(s, m)]
        assert all(jump_hash(s, m) >= n for s in moved)          # a moved slot goes to a new shard only
        assert abs(len(moved) / SLOTS - (m - n) / m) < 0.06
    sizes = [len(s) for s in slot_table(3)]
    assert sum(sizes) == SLOTS and max(sizes) - min(sizes) < 40


def test_shard_spec_is_checked():
    assert parse_shard("1/3") == (1, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ConfigError):
            parse_shard(bad)


def test_guard_refuses_other_shards_users_and_creating_calls_without_user():
    calls = []

    class Target:
        def add(self, messages, **kw):
            calls.append(kw)
            return "stored"

        def get_all(self, **kw):
            return "read"

    mine = shard_of_key("alice", 3)
    g = ShardGuard(Target(), shard=mine, shards=3)
    assert g.add("x", user_id="alice") == "stored"
    other = next(u for u in (f"u{i}" for i in range(100)) if shard_of_key(u, 3) != mine)
    with pytest.raises(WrongShardError) as info:
        g.add("x", user_id=other)
    assert info.value.fields["shard"] == shard_of_key(other, 3) and len(calls) == 1   # nothing stored
    with pytest.raises(WrongShardError):
        g.get_all(filters={"user_id": other})
    agent = next(a for a in (f"a{i}" for i in range(100)) if shard_of_key(a, 3) != mine)
    with pytest.raises(WrongShardError):
        g.add("x", agent_id=agent)
    assert g.get_all(agent_id=agent) == "read"          # a read without a user is one part of a fan-out


def test_client_routes_by_user_else_fans_out():
    assert route_key("get_all", {"filters": {"user_id": "ann"}}) == "ann"
    assert route_key("delete_all", {"agent_id": "bot"}) is None
    assert route_key("ingest", {"run_id": "r1"}) == "r1"


@needs_haproxy
def test_generated_config_is_valid_haproxy(tmp_path):
    cfg = tmp_path / "m.cfg"
    cfg.write_text(haproxy_config([f"http://127.0.0.1:{9000 + i}" for i in range(5)]))
    out = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    with pytest.raises(ConfigError):
        haproxy_config(["http://10.0.0.1:9000"], bind="0.0.0.0:8765")       # plain HTTP off loopback


# -- real processes ---------------------------------------------------------------------------------
def _workers(url, token, tmp, kinds, users, seconds, tag, stop_file=None):
    procs, logs = [], []
    env = {**os.environ, "MEMSTORE_TOKEN": token, "PYTHONPATH": os.getcwd()}
    for i, kind in enumerate(kinds):
        log = tmp / f"{tag}-{i}-{kind}.jsonl"
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, "-m", "memstore.testing.cluster_worker", url, str(log),
                                       "--kind", kind, "--users", ",".join(users), "--seconds", str(seconds),
                                       "--worker", str(i)] + (["--stop-file", str(stop_file)] if stop_file else []),
                                      env=env))
    return procs, logs


def _records(logs):
    out = []
    for log in logs:
        if log.exists():
            out += [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return out


def _placed(cluster):
    """{memory id: [(shard, user_id), ...]} over every shard's store, read on the shard itself."""
    from memstore.api.http_client import MemoryClient

    where = collections.defaultdict(list)
    for i, srv in enumerate(cluster.servers):
        with MemoryClient(srv.url, token=cluster.token) as m:
            for row in m.sql("SELECT id, user_id FROM memories").to_dicts():
                where[row["id"]].append((i, row["user_id"]))
    return where


def _assert_each_ack_once_on_its_shard(records, where, shards):
    acked = [(r["user"], mid) for r in records if r["op"] == "ack" for mid in r["ids"]]
    assert acked
    for user, mid in acked:
        assert where.get(mid) == [(shard_of_key(user, shards), user)], (user, mid, where.get(mid))
    users_on = collections.defaultdict(set)
    for places in where.values():
        for shard, user in places:
            users_on[user].add(shard)
    assert all(len(s) == 1 for s in users_on.values()), {u: s for u, s in users_on.items() if len(s) > 1}
    return acked


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not haproxy_available():
        pytest.skip("haproxy is not installed (.ci/run installs it)")
    with ClusterProcess(tmp_path_factory.mktemp("cluster"), shards=3, config=HASHING) as c:
        yield c


@needs_haproxy
def test_mixed_load_lands_every_write_once_on_its_shard(cluster, tmp_path):
    users = [f"user-{i}" for i in range(40)]
    kinds = ["client", "client", "client", "rest", "rest", "rest", "mcp", "mcp"]
    procs, logs = _workers(cluster.url, cluster.token, tmp_path, kinds, users, 8, "mixed")
    for p in procs:
        assert p.wait(120) == 0
    records = _records(logs)
    errors = [r for r in records if r["op"] == "error"]
    assert not errors, errors[:5]
    assert {r["kind"] for r in records if r["op"] == "ack" and r["ids"]} == {"client", "rest", "mcp"}
    reads = [r for r in records if r["op"] == "read"]
    assert reads and all(r["ok"] for r in reads), [r for r in reads if not r["ok"]][:5]   # reads see own writes
    _assert_each_ack_once_on_its_shard(records, _placed(cluster), 3)
    m = cluster.client()
    assert isinstance(m, ClusterClient) and m.shards == 3
    doctor = m.doctor()                                     # fans out: every shard's violations, by shard
    assert "shard" in doctor.columns
    assert doctor.filter(doctor["severity"] == "error").height == 0


@needs_haproxy
def test_cross_shard_reads_fan_out_or_point_at_the_lake(cluster):
    m = cluster.client()
    users = [u for u in (f"fan-{i}" for i in range(40))][:12]
    ids = {u: m.add(f"{u} keeps bees", user_id=u, agent_id="beekeeper", infer=False)["results"][0]["id"]
           for u in users}
    assert {shard_of_key(u, 3) for u in users} == {0, 1, 2}
    found = m.get_all(agent_id="beekeeper", top_k=1000)["results"]     # an agent-only filter: every shard
    assert {r["id"] for r in found} >= set(ids.values())
    hits = m.search("bees", agent_id="beekeeper", top_k=5)["results"]
    assert len(hits) == 5 and hits == sorted(hits, key=lambda r: -r["score"])
    some = ids[users[0]]
    assert m.get(some)["user_id"] == users[0]                          # by id: asks shard after shard
    assert m.update(some, text="fan-0 keeps wasps")["memory"] == "fan-0 keeps wasps"
    with pytest.raises(CrossShardError, match="lake"):
        m.sql("SELECT count(*) FROM memories")
    with pytest.raises(CrossShardError):
        m.add("no scope at all")


@needs_haproxy
def test_balancer_routes_raw_rest_and_refuses_what_names_no_user(cluster):
    from memstore.wire.transport import Transport

    head = {"Authorization": f"Bearer {cluster.token}", "Content-Type": "application/json"}
    t = Transport(cluster.url, headers=head)
    status, _, body = t.request("GET", "/memories?agent_id=x")
    assert status == 400 and json.loads(body)["error"]["type"] == "IdentityError"
    status, _, body = t.request("POST", "/memories", json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                                                 "agent_id": "lonely-agent", "infer": False}))
    assert status == 200                                               # a write by agent: the agent's shard
    mid = json.loads(body)["results"][0]["id"]
    owner = shard_of_key("lonely-agent", 3)
    assert [s for s, _ in _placed(cluster)[mid]] == [owner]
    # Straight to a shard that does not own the scope: refused, nothing stored, the right shard named.
    wrong = cluster.servers[(owner + 1) % 3]
    direct = Transport(wrong.url, headers=head)
    status, _, body = direct.request("POST", "/memories", json.dumps({
        "messages": [{"role": "user", "content": "misrouted"}], "agent_id": "lonely-agent", "infer": False}))
    err = json.loads(body)["error"]
    assert status == 421 and err["type"] == "WrongShardError" and err["fields"]["shard"] == owner


@needs_haproxy
def test_a_scoped_token_passes_through_the_balancer_unchanged(cluster):
    from memstore import AuthError, connect

    admin = cluster.client()
    token = admin.create_token("ana-phone", user_id="ana")["token"]      # stored on ana's shard
    ana = connect(cluster.url, token=token)
    mid = ana.add("Ana plays the cello", user_id="ana", infer=False)["results"][0]["id"]
    assert [r["id"] for r in ana.get_all(user_id="ana")["results"]] == [mid]
    assert _placed(cluster)[mid] == [(shard_of_key("ana", 3), "ana")]
    other = next(u for u in (f"o-{i}" for i in range(50)) if shard_of_key(u, 3) != shard_of_key("ana", 3))
    with pytest.raises(AuthError):                                     # another user's shard: not its token
        ana.add("not mine", user_id=other, infer=False)


@needs_haproxy
def test_kill_9_of_a_shard_fails_only_its_users(cluster, tmp_path):
    victim = 1
    users = [f"k-{i}" for i in range(30)]
    assert {shard_of_key(u, 3) for u in users} == {0, 1, 2}
    procs, logs = _workers(cluster.url, cluster.token, tmp_path, ["client"] * 3, users, 7, "kill")
    time.sleep(2.5)
    killed_at = time.time()
    cluster.kill_shard(victim)
    for p in procs:
        assert p.wait(120) == 0
    records = _records(logs)
    errors = [r for r in records if r["op"] == "error"]
    assert errors and {r["type"] for r in errors} == {"ServerUnavailableError"}
    assert {shard_of_key(r["user"], 3) for r in errors} == {victim}
    after = [r for r in records if r["op"] == "ack" and r["t"] > killed_at + 0.5]
    assert after and all(shard_of_key(r["user"], 3) != victim for r in after)    # the others go on
    # The health checks have marked it down: the balancer itself answers, naming the shard.
    from memstore.wire.transport import Transport

    status, _, body = Transport(cluster.url).request("GET", "/memories?user_id=" + next(
        u for u in users if shard_of_key(u, 3) == victim))
    err = json.loads(body)["error"]
    assert status == 503 and err["type"] == "ServerUnavailableError" and f"shard {victim}" in err["message"]
    cluster.restart_shard(victim)
    cluster.wait_ready()
    _assert_each_ack_once_on_its_shard(records, _placed(cluster), 3)


@needs_haproxy
def test_rebalance_2_to_3_under_load_killed_and_rerun(tmp_path):
    users = [f"r-{i}" for i in range(18)]
    with ClusterProcess(tmp_path / "c", shards=2, config=HASHING) as c:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(1)
        new_shard = pool.submit(lambda: c.make_shard(2, 3).start())      # 1. the new shard, starting meanwhile
        m = c.client()
        before = [(u, m.add(f"{u} was here first, take {k}", user_id=u, infer=False)["results"][0]["id"])
                  for u in users for k in range(2)]
        moving = {u for u in users if shard_of_key(u, 2) != shard_of_key(u, 3)}
        assert moving and len(moving) < len(users)
        stop = tmp_path / "stop"                                       # the load runs until the end
        procs, logs = _workers(c.url, c.token, tmp_path, ["client", "client"], users, 600, "grow", stop)
        time.sleep(1.0)
        c.servers.append(new_shard.result())
        pool.shutdown()
        c.start_balancer()                                             # 2. the balancer learns 3 shards
        c.restart_shards([0, 1], 3)                                    # 3. the old shards too
        c.wait_ready()
        old = ",".join(s.url for s in c.servers[:2])
        new = ",".join(s.url for s in c.servers)
        cmd = [sys.executable, "-m", "memstore.cli", "cluster", "rebalance", "--from", old, "--to", new,
               "--staging", str(tmp_path / "staging")]
        env = {**os.environ, "MEMSTORE_TOKEN": c.token}
        first = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(3):                                             # 4. kill -9 in the middle of the moves
            line = first.stderr.readline()
            assert line.startswith("moving"), line + first.stderr.read()
        first.kill()
        first.wait()
        rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert rerun.returncode == 0, rerun.stderr
        report = json.loads(rerun.stdout)
        time.sleep(1.0)
        stop.touch()
        for p in procs:
            assert p.wait(120) == 0
        records = _records(logs)
        errors = [r for r in records if r["op"] == "error"]
        assert {r["type"] for r in errors} <= {"ServerUnavailableError", "WrongShardError", "NotFoundError"}
        # A moving user's older memories are on the old shard until moved (README: reads of a moving user).
        assert all(r["user"] in moving for r in errors if r["type"] == "NotFoundError")
        journal = [json.loads(x) for x in (tmp_path / "staging" / "rebalance-journal.jsonl").read_text().splitlines()]
        done = {r["user_id"]: r for r in journal if r["step"] == "forgotten"}
        assert set(done) == moving and report["moved"] == len(moving)          # a receipt per moved user
        assert len(report["receipts"]) == len(moving)
        for rec in done.values():       # the old shard erased exactly what was verified on the new one
            assert rec["receipt"]["id"] and rec["receipt"]["rows_removed"]["memories"] == rec["memory_ids"] >= 2
        where = _placed(c)
        for u, mid in before:
            assert where[mid] == [(shard_of_key(u, 3), u)]
        _assert_each_ack_once_on_its_shard(records, where, 3)
        doctor = c.client().doctor()
        assert doctor.filter(doctor["severity"] == "error").height == 0


def test_scope_merge_copies_one_user_and_a_rerun_stores_nothing_twice(tmp_path):
    from memstore import Memory
    from memstore.analysis.scope_merge import merge_scope_export

    with Memory(tmp_path / "a.duckdb", config=HASHING) as a, Memory(tmp_path / "b.duckdb", config=HASHING) as b:
        a.add("Ana lives in Lisbon and works at Acme", user_id="ana")
        a.add("I bought 3 blue pens at the station", user_id="ana", agent_id="shop")
        a.add("Bo keeps bees", user_id="bo", infer=False)
        b.add("Cy plays chess", user_id="cy", infer=False)
        a.export_parquet(tmp_path / "x", scope={"user_id": "ana"}, partition_by=None)
        first = merge_scope_export(b.db, tmp_path / "x")
        again = merge_scope_export(b.db, tmp_path / "x")
        want = {r["id"]: r["memory"] for r in a.get_all(user_id="ana", top_k=1000)["results"]}
        got = {r["id"]: r["memory"] for r in b.get_all(user_id="ana", top_k=1000)["results"]}
        assert want and got == want
        assert first["memories"]["inserted"] == first["memories"]["exported"] == len(want)
        assert all(t["inserted"] == 0 for t in again.values())           # the re-run stored nothing
        assert b.get_all(user_id="bo")["results"] == []                  # only the exported user came
        assert [h["event"] for h in b.history(next(iter(want)))] == [h["event"] for h in a.history(next(iter(want)))]
        assert b.search("where does ana live", user_id="ana")["results"][0]["memory"] == want[
            a.search("where does ana live", user_id="ana")["results"][0]["id"]]
        assert b.doctor().filter(b.doctor()["severity"] == "error").height == 0


def test_cli_prints_the_config_and_placements(capsys):
    from memstore.cli import main

    assert main(["cluster", "haproxy", "--shards", "http://127.0.0.1:9000,http://127.0.0.1:9001"]) == 0
    cfg = capsys.readouterr().out
    assert "backend shard1" in cfg and "server shard0 127.0.0.1:9000" in cfg
    assert main(["cluster", "place", "alice", "--shards", "3"]) == 0
    assert capsys.readouterr().out.split() == ["alice", "slot", str(slot_of("alice")), "shard",
                                               f"{shard_of_key('alice', 3)}/3"]
    assert main(["cluster", "haproxy", "--shards", "ftp://x"]) == 1             # a typed error, no traceback


def test_fan_out_with_a_shard_unreachable_names_it_and_does_not_hang():
    from memstore import ServerUnavailableError
    from memstore.testing.server_process import free_port

    # Nothing listens behind this "balancer": every shard of the fan-out is unreachable.
    m = ClusterClient(f"http://127.0.0.1:{free_port()}", token="t", layout={"service": "memstore-cluster",
                                                                            "shards": 3})
    with pytest.raises(ServerUnavailableError, match=r"\[0, 1, 2\]"):
        m.get_all(agent_id="bot")
    with pytest.raises(ServerUnavailableError):
        m.get("some-id")
    m.close()
