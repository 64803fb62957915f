"""One lake for every shard (issue 29): DuckLake on a real PostgreSQL started by the tests.

- two shard servers publish every second while clients write: after the final publish the lake
  holds every row of every shard once, and the lake's timeline matches each shard's;
- a publish killed with SIGKILL inside its transaction leaves no snapshot and no row; the next
  publish (the CLI) completes it, without duplicates;
- forget() on a shard reaches the lake: no byte of the user's marker in the lake's data files nor
  in PostgreSQL's data directory (files a killed publish left behind included), other users intact;
- a forget while PostgreSQL is down is journaled, `doctor` reports it, the next publish finishes it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from memstore import Memory
from memstore.testing.postgres import PostgresCluster, available

pytest.importorskip("duckdb_extension_ducklake")
pytest.importorskip("duckdb_extension_postgres")
pytestmark = pytest.mark.skipif(not available(), reason="PostgreSQL is not installed (apt-get install postgresql)")

import memstore.lake as lake
from memstore.store.views import view_query
from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}}
TABLES = ("memories", "history", "entities", "entity_postings", "keyword_postings", "memory_links", "extraction_runs")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pg():
    with PostgresCluster() as cluster:
        yield cluster


@pytest.fixture
def lake_name(pg, request):
    db = "lake_" + request.node.name.replace("test_", "")[:40].lower()
    return "postgres:" + pg.create_database(db)


def dbname(lake_name: str) -> str:
    return lake_name.split("dbname=")[1].split()[0]


def store_counts(path: str) -> dict[str, int]:
    con = duckdb.connect(path, read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def lake_counts(name: str, shard: str) -> dict[str, int]:
    with lake.connect(name) as lk:
        return {t: lk.sql(f"SELECT count(*) FROM {t} WHERE shard = ?", [shard]).fetchone()[0] for t in TABLES}


def marker_bytes(roots: list[Path], marker: str) -> dict[str, int]:
    needle = marker.encode()
    hits = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for n in names:
                p = os.path.join(folder, n)
                try:
                    data = Path(p).read_bytes()
                except OSError:
                    continue
                if needle in data:
                    hits[p] = data.count(needle)
    return hits


def test_two_shards_publish_concurrently_while_clients_write(tmp_path, lake_name):
    data = tmp_path / "lake"
    stores = {s: str(tmp_path / f"{s}.duckdb") for s in ("east", "west")}
    servers = {s: ServerProcess(p, config=CONFIG, args=["--publish-to", lake_name, "--publish-every", "1s",
                                                        "--publish-data-path", str(data)])
               for s, p in stores.items()}
    for srv in servers.values():
        srv.start()
    errors: list[BaseException] = []

    def write(shard: str, worker: int) -> None:
        try:
            m = servers[shard].client()
            for i in range(8):
                r = m.add(f"{shard} user{worker} fact {i}: likes tea number {i * 7 + worker}",
                          user_id=f"{shard}-u{worker}", infer=False)
                if i % 4 == 3:          # an update and a delete too: the diff must carry them
                    mid = r["results"][0]["id"]
                    m.update(mid, f"{shard} user{worker} fact {i} corrected")
                if i == 6:
                    m.delete(r["results"][0]["id"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, w)) for s in stores for w in range(1)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
    finally:
        for srv in servers.values():
            srv.stop()               # SIGTERM: the server publishes once more before closing the store
    assert not errors, errors
    for shard, path in stores.items():
        expected = store_counts(path)
        assert expected["memories"] == 7, expected
        assert lake_counts(lake_name, shard) == expected, shard
    with lake.connect(lake_name) as lk:
        assert lk.sql("SELECT count(*) - count(DISTINCT id) FROM memories").fetchone()[0] == 0
        publishes = lk.sql("SELECT shard, count(*) FROM publishes GROUP BY ALL").fetchall()
        assert {s for s, _ in publishes} == set(stores)
        for shard, path in stores.items():        # the fleet's timeline is each shard's timeline
            con = duckdb.connect(path, read_only=True)
            try:
                con.execute(f"CREATE TEMP VIEW timeline AS {view_query('timeline')}")
                mine = sorted(con.execute("SELECT id, memory, valid_from, valid_to, status FROM timeline").fetchall())
            finally:
                con.close()
            theirs = sorted(lk.sql("SELECT id, memory, valid_from, valid_to, status FROM timeline WHERE shard = ?", [shard]).fetchall())
            assert theirs == mine
        frame = lk.frame("SELECT shard, count(*) AS n FROM memories GROUP BY ALL ORDER BY shard")
        assert frame["n"].to_list() == [7, 7]


def _killed_publish(store: str, name: str, data: Path) -> int:
    code = ("import memstore.lake as l; from memstore import Memory; "
            f"m = Memory({store!r}, config={CONFIG!r}, embedded=True); "
            f"l.publish(m.db, {name!r}, data_path={str(data)!r}, fault='before_commit')")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=120).returncode


def test_kill9_inside_a_publish_leaves_nothing_and_the_next_publish_completes(tmp_path, lake_name, pg):
    data = tmp_path / "lake"
    store = str(tmp_path / "north.duckdb")
    m = Memory(store, config=CONFIG)
    for i in range(15):
        m.add(f"north fact {i} about Vellowmere harbour", user_id=f"n{i % 3}", infer=False)
    first = lake.publish(m.db, lake_name, data_path=data)
    assert first.inserted["memories"] == 15
    for i in range(15, 25):
        m.add(f"north fact {i} about Vellowmere harbour", user_id=f"n{i % 3}", infer=False)
    m.close()
    snapshots = pg.psql("SELECT count(*) FROM ducklake_snapshot", dbname=dbname(lake_name)).strip()
    assert _killed_publish(store, lake_name, data) == -9
    assert pg.psql("SELECT count(*) FROM ducklake_snapshot", dbname=dbname(lake_name)).strip() == snapshots   # no partial snapshot
    assert lake_counts(lake_name, "north")["memories"] == 15
    out = subprocess.run([sys.executable, "-m", "memstore.cli", "publish", "--store", store, "--lake", lake_name,
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert '"memories": 10' in out.stdout
    assert lake_counts(lake_name, "north") == store_counts(store)
    m = Memory(store, config=CONFIG)
    assert lake.publish(m.db, lake_name).rows == 0          # idempotent: nothing left to send
    m.close()
    with lake.connect(lake_name) as lk:
        assert lk.sql("SELECT count(*), count(DISTINCT id) FROM memories").fetchone() == (25, 25)
        assert lk.sql("SELECT count(*) FROM publishes WHERE shard = 'north'").fetchone()[0] == 2


def test_forget_reaches_the_lake_bytes_and_catalog(tmp_path, lake_name, pg):
    data = tmp_path / "lake"
    store = str(tmp_path / "south.duckdb")
    marker = "Zorvexalith"
    m = Memory(store, config=CONFIG)
    for i in range(8):
        m.add(f"I keep a {marker} amulet number {i}", user_id="alice", infer=False)
        m.add(f"Bob plays the Quenderharp, song {i}", user_id="bob", infer=False)
    lake.publish(m.db, lake_name, data_path=data)
    m.add(f"my {marker}{marker} cellar key", user_id="alice", infer=False)
    m.close()
    assert _killed_publish(store, lake_name, data) == -9      # orphan Parquet files holding the marker
    pg.psql("CHECKPOINT")
    assert marker_bytes([data], marker)                         # the lake holds it (files are uncompressed enough)
    m = Memory(store, config=CONFIG)
    receipt = m.forget(user_id="alice")
    copy = receipt["verification"]["downstream"]["lake"]
    assert copy["ok"], copy
    assert copy["rows_removed"]["memories"] == 8
    assert copy["scan"]["pg_data_directory_scanned"] and copy["scan"]["files_scanned"] > 100
    assert receipt["verified"]
    assert marker_bytes([data, pg.data_dir], marker) == {}
    assert len(m.get_all(user_id="bob")["results"]) == 8
    m.close()
    with lake.connect(lake_name) as lk:
        assert lk.sql("SELECT count(*) FROM memories WHERE user_id = 'alice'").fetchone()[0] == 0
        assert lk.sql("SELECT count(*) FROM memories WHERE user_id = 'bob'").fetchone()[0] == 8
        assert lk.sql("SELECT count(*) FROM history WHERE user_id = 'bob'").fetchone()[0] == 8
    # no text statistics left in the catalog (a table's min/max is not recomputed on delete): only text-free bounds
    assert pg.psql("SELECT count(*) FROM ducklake_table_column_stats s JOIN ducklake_column c USING (table_id, "
                   "column_id) WHERE c.column_type = 'varchar' AND (s.min_value <> '' OR s.max_value <> repeat(chr(1114111), 16))",
                   dbname=dbname(lake_name)).strip() == "0"


def test_forget_while_the_lake_is_down_is_journaled_and_the_next_publish_finishes_it(tmp_path, lake_name, pg):
    data = tmp_path / "lake"
    store = str(tmp_path / "west.duckdb")
    marker = "Plimbrastoke"
    m = Memory(store, config=CONFIG)
    m.add(f"the {marker} recipe is mine", user_id="carol", infer=False)
    m.add("Dave collects stamps", user_id="dave", infer=False)
    lake.publish(m.db, lake_name, data_path=data)
    pg.pause()
    try:
        receipt = m.forget(user_id="carol")
        copy = receipt["verification"]["downstream"]["lake"]
        assert copy["pending"] and not receipt["verified"]
        problems = m.doctor()
        assert "pending_downstream_erasures" in problems["check"].to_list()
    finally:
        pg.resume()
    report = lake.publish(m.db, lake_name)
    assert report.erasures["lake"]["ok"], report.erasures
    checks = m.doctor()["check"].to_list()
    assert "pending_downstream_erasures" not in checks and "unverified_receipts" not in checks, checks
    (stored,) = [r for r in m.erasure_receipts() if r["id"] == receipt["id"]]
    assert stored["verified"], stored["verification"]
    assert stored["verification"]["downstream"]["lake"]["ok"] and stored["verification"]["store_ok"]
    m.close()
    assert marker_bytes([data, pg.data_dir], marker) == {}
    with lake.connect(lake_name) as lk:
        assert lk.sql("SELECT user_id FROM memories").fetchall() == [("dave",)]


def test_a_scheduled_publish_skips_an_unchanged_store_and_catches_every_change(tmp_path, lake_name):
    """`serve --publish-every`: a tick with no commit since the last good publish reads nothing; the
    next add is published on the next tick."""
    from memstore.lake.schedule import Publisher

    m = Memory(str(tmp_path / "south.duckdb"), config=CONFIG)
    m.add("south fact about Quillon bay", user_id="s1", infer=False)
    pub = Publisher(m.db, lake_name, 3600.0, data_path=str(tmp_path / "lake"))   # ticks by hand
    first = pub.publish_now()
    assert first is not None and first["inserted"]["memories"] == 1, pub.error
    for _ in range(3):
        pub.publish_now()                       # nothing changed: the lake is not read, not written
    # the first publish records the lake in the store (a write): at most one more publish, then skips
    assert (pub.publishes, pub.skipped) in {(1, 3), (2, 2)}
    m.add("second south fact about Quillon harbour", user_id="s2", infer=False)
    report = pub.publish_now()
    assert report is not None and report["inserted"]["memories"] == 1
    forced = pub.publish_now(force=True)                # forced: the lake agrees, nothing to send
    assert forced is not None and sum(forced["inserted"].values()) + sum(forced["deleted"].values()) == 0
    m.close()
    assert lake_counts(lake_name, "south") == store_counts(str(tmp_path / "south.duckdb"))


def test_forget_through_plain_serve_erases_the_lake_history_and_extraction_runs(tmp_path, lake_name, pg):
    """Issue 44: the lake is recorded in the store, so a plain `memstore serve` (no --publish-to,
    nothing imports memstore.lake in it) loads the lake's eraser by kind and finishes the erasure:
    200, verified, and no byte of the marker in the lake's files (history and extraction_runs
    included) nor in PostgreSQL's data directory."""
    import json as _json
    import urllib.request

    data = tmp_path / "lake"
    store = str(tmp_path / "plain.duckdb")
    marker = "Quorthavelin"
    m = Memory(store, config=CONFIG)
    m.add([{"role": "user", "content": f"My cat {marker} sleeps on the piano every afternoon."}], user_id="erin")
    m.add(f"I hide the {marker} lantern in the attic", user_id="erin", infer=False)
    m.add("Frank restores old bicycles", user_id="frank", infer=False)
    lake.publish(m.db, lake_name, data_path=data)
    m.close()
    with lake.connect(lake_name) as lk:
        for table in ("history", "extraction_runs"):
            assert lk.sql(f"SELECT count(*) FROM {table} WHERE user_id = 'erin'").fetchone()[0] > 0, table
    pg.psql("CHECKPOINT")
    assert marker_bytes([data], marker)
    srv = ServerProcess(store, config=CONFIG)
    srv.start()
    try:
        req = urllib.request.Request(srv.url + "/v1/forget", method="POST",
                                     data=_json.dumps({"kwargs": {"user_id": "erin"}}).encode(),
                                     headers={"Authorization": f"Bearer {srv.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            status, receipt = resp.status, _json.loads(resp.read())
        assert "memstore.lake" not in srv.log()
        doctor = srv.client().doctor()
    finally:
        srv.stop()
    copy = receipt["verification"]["downstream"]["lake"]
    assert status == 200 and receipt["verified"] and receipt["pending"] == [], (status, receipt)
    assert copy["ok"] and copy["rows_removed"]["history"] >= 2 and copy["rows_removed"]["extraction_runs"] >= 1, copy
    assert "pending_downstream_erasures" not in doctor["check"].to_list()
    assert marker_bytes([data, pg.data_dir], marker) == {}
    with lake.connect(lake_name) as lk:
        for table in ("memories", "history", "extraction_runs"):
            assert lk.sql(f"SELECT count(*) FROM {table} WHERE user_id = 'erin'").fetchone()[0] == 0, table
        assert lk.sql("SELECT count(*) FROM memories WHERE user_id = 'frank'").fetchone()[0] == 1
