"""Ingest on Ray (memstore/on_ray/), on a real local Ray (`ray.init(num_cpus=2)`), not a mock: the
demo ChatGPT export and LoCoMo file through the Ray path give the same memories as the one-machine
`Memory.ingest` (text, scope, times, supersessions, sources), a second run stores nothing, a Ray
worker killed mid-run loses and doubles nothing, a Ray Dataset of rows goes in through
`memstore.ingest_dataset`, and a 2-shard cluster (a shard down while the run starts) gets each
user's conversations on the shard the placement function names. Few and slow-ish: Ray starts once
per module and each run loads spaCy in its actors."""
from __future__ import annotations

import time

import pytest

from memstore import Memory
from memstore.api.http_client import MemoryClient
from memstore.on_ray.ingest import ingest_dataset, ingest_files

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

CONFIG = {"embedder": {"provider": "hashing"}}
FILES = {"alice": "data/demo/chatgpt/alice/conversations.json", "carol": "data/demo/locomo/carol_dave.json"}
COLUMNS = ("memory, valid_from, expiration_date, invalidated_at IS NOT NULL AS closed, "
           "superseded_by IS NOT NULL AS replaced, list_sort(source_message_ids) AS sources")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The one-machine ingest of the same files: what the Ray path must equal."""
    path = str(tmp_path_factory.mktemp("one") / "one.duckdb")
    with Memory(path, config=CONFIG) as m:
        reports = {u: m.ingest(f, user_id=u, progress=False) for u, f in FILES.items()}
        rows = {u: _rows(m, u) for u in FILES}
    return reports, rows


def _rows(m, user: str) -> list[tuple]:
    return m.sql(f"SELECT {COLUMNS} FROM memories WHERE user_id = $u ORDER BY ALL", {"u": user}).rows()


def _messages(m, user: str) -> list[tuple]:
    return m.sql("SELECT id, content, created_at FROM messages WHERE user_id = $u ORDER BY ALL", {"u": user}).rows()


def test_on_ray_equals_one_machine_and_runs_once(local_ray, baseline, tmp_path):
    reports, rows = baseline
    store = str(tmp_path / "ray.duckdb")
    for user, path in FILES.items():
        r = ingest_files(path, to=store, user_id=user, config=CONFIG, actors=2, progress=False)
        one = reports[user]
        assert r.balanced() and r.status == "done"
        assert r.messages == one.messages and r.memories == one.memories
        assert r.stages_cpu_s["workers"] > 0
    with Memory(store, config=CONFIG) as m:
        for user in FILES:
            assert _rows(m, user) == rows[user]
        n_messages = m.sql("SELECT count(*) AS n FROM messages")["n"][0]
    for user, path in FILES.items():       # a second run: everything already stored, nothing sent to Ray
        again = ingest_files(path, to=store, user_id=user, config=CONFIG, actors=2, progress=False)
        assert again.messages["stored"] == 0 and again.messages["already_ingested"] == reports[user].messages["stored"]
    with Memory(store, config=CONFIG) as m:
        assert m.sql("SELECT count(*) AS n FROM messages")["n"][0] == n_messages
        assert _rows(m, "alice") == rows["alice"]


def test_a_worker_killed_mid_run_loses_and_doubles_nothing(local_ray, baseline, tmp_path, monkeypatch):
    reports, rows = baseline
    marker = tmp_path / "killed"
    monkeypatch.setenv("MEMSTORE_TEST_RAY_KILL_MARKER", str(marker))      # the actor SIGKILLs itself once
    store = str(tmp_path / "ray.duckdb")
    r = ingest_files(FILES["alice"], to=store, user_id="alice", config=CONFIG, actors=2, batch_conversations=1,
                     progress=False)
    assert marker.exists(), "no Ray worker was killed: the test proved nothing"
    assert r.messages == reports["alice"].messages and r.status == "done"
    with Memory(store, config=CONFIG) as m:
        assert _rows(m, "alice") == rows["alice"]
        assert m.sql("SELECT count(*) AS n, count(DISTINCT message_key) AS k FROM ingest_log").rows() == \
            [(reports["alice"].messages["stored"],) * 2]


def test_a_dataset_of_rows_per_user(local_ray, tmp_path):
    rows = [{"customer": u, "thread": f"t-{u}", "msg": f"{u}-{i}", "role": "user", "text": text,
             "ts": f"2024-0{i + 1}-01T10:00:00"}
            for u in ("ana", "ben") for i, text in enumerate(["I live in Lisbon.", "I moved to Porto."])]
    ds = ray.data.from_items(rows)
    mapping = {"user_id": "customer", "conversation": "thread", "id": "msg", "content": "text", "ts": "ts"}
    store = str(tmp_path / "ds.duckdb")
    r = ingest_dataset(ds, to=store, mapping=mapping, config=CONFIG, actors=1, progress=False)
    assert r.messages["stored"] == 4 and r.balanced()
    with Memory(store, config=CONFIG) as m:
        for u in ("ana", "ben"):
            current = [x["memory"] for x in m.get_all(user_id=u)["results"]]
            assert any("Porto" in t for t in current) and not any("Lisbon" in t for t in current), current
    again = ingest_dataset(ds, to=store, mapping=mapping, config=CONFIG, actors=1, progress=False)
    assert again.messages["stored"] == 0 and again.messages["already_ingested"] == 4


def test_two_shard_cluster_with_a_shard_down_at_the_start(local_ray, baseline, tmp_path):
    from memstore.core.placement import shard_of
    from memstore.testing.cluster_process import ClusterProcess, haproxy_available

    if not haproxy_available():
        pytest.skip("haproxy is not installed")
    _, rows = baseline
    import threading

    with ClusterProcess(tmp_path / "c", shards=2, config=CONFIG) as cluster:
        down = shard_of({"user_id": "carol"}, 2)
        cluster.kill_shard(down)             # the owner is down when the driver asks it what it holds
        threading.Timer(3.0, lambda: cluster.restart_shard(down)).start()
        t0 = time.monotonic()
        for user in ("carol", "alice"):
            r = ingest_files(FILES[user], to=cluster.url, user_id=user, config=CONFIG, actors=2, progress=False,
                             token=cluster.token)
            assert r.status == "done" and r.messages["failed"] == 0
            if user == "carol":   # it waited for the shard to come back: the driver's own retries, or the
                # memstore client's (it retries the balancer's retryable 503s for up to retry_for seconds)
                assert r.stages_s["owner unavailable (waited)"] > 0 or time.monotonic() - t0 >= 3.0
        for user in FILES:
            for i, srv in enumerate(cluster.servers):     # each user's memories on its shard, none elsewhere
                with MemoryClient(srv.url, token=cluster.token) as m:
                    assert _rows(m, user) == (rows[user] if i == shard_of({"user_id": user}, 2) else [])


def test_reembed_on_ray_equals_a_store_built_with_local(local_ray, tmp_path):
    from memstore.on_ray.reembed import ray_embed

    built = {}
    for name, cfg in (("h", CONFIG), ("l", {"embedder": {"provider": "local"}})):
        built[name] = str(tmp_path / f"{name}.duckdb")
        with Memory(built[name], config=cfg) as m:
            m.ingest(FILES["carol"], user_id="carol", progress=False)
    queries = ["who did carol meet", "what does dave do", "a trip"]
    embed = ray_embed({"provider": "local"}, address=None, actors=2, dim=384, chunk=16)
    with Memory(built["h"], config=CONFIG) as m:
        out = m.reembed("local", batch=32, embed=embed)
        assert out["status"] == "done" and out["memories"] > 0
        got = [[(r["memory"], round(r["score"], 5)) for r in m.search(q, user_id="carol")["results"]] for q in queries]
    with Memory(built["l"], config={"embedder": {"provider": "local"}}) as m:
        want = [[(r["memory"], round(r["score"], 5)) for r in m.search(q, user_id="carol")["results"]] for q in queries]
    assert got == want


def test_the_owner_killed_and_restarted_mid_run(local_ray, baseline, tmp_path):
    """A `memstore serve` owner SIGKILLed once its first conversations are committed, started again on
    the same port: the driver waits for it, retries, and the store ends equal to the one-machine one."""
    import threading
    import time

    from memstore.testing.server_process import ServerProcess

    reports, rows = baseline
    store = tmp_path / "owned.duckdb"
    srv = ServerProcess(store, config=CONFIG).start()
    port, token = srv.port, srv.token
    killed = threading.Event()

    def killer() -> None:
        with MemoryClient(srv.url, token=token) as c:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    if c.sql("SELECT count(*) AS n FROM ingest_log")["n"][0] > 0:
                        break
                except Exception:
                    pass
                time.sleep(0.05)
        srv.kill()
        killed.set()
        time.sleep(1.0)
        restarted.append(ServerProcess(store, config=CONFIG, port=port,
                                       env={"MEMSTORE_TOKEN": token}).start())

    restarted: list = []
    t = threading.Thread(target=killer)
    t.start()
    try:
        r = ingest_files(FILES["alice"], to=srv.url, user_id="alice", config=CONFIG, actors=2, progress=False,
                         token=token, commit_messages=20, batch_conversations=1)
    finally:
        t.join()
    try:
        assert killed.is_set()
        assert r.status == "done" and r.messages["stored"] == reports["alice"].messages["stored"]
        assert r.stages_s["owner unavailable (waited)"] > 0
        with MemoryClient(restarted[0].url, token=token) as m:
            assert _rows(m, "alice") == rows["alice"]
            assert m.sql("SELECT count(*) AS n FROM ingest_log")["n"][0] == reports["alice"].messages["stored"]
    finally:
        for s in restarted:
            s.stop()
