"""The dashboard pointed at a lake (issue 29): the Overview reads every shard that publishes into a
DuckLake on a real PostgreSQL started here, through Streamlit's AppTest (the real script, in-process).

- a lake alone ($MEMSTORE_LAKE, no store): Overview and Fleet pages only, counts per shard equal to
  each shard's own `scope_summary`, no store opened or built;
- a publish (and a forget that reaches the lake) after the dashboard opened is seen on the next run;
- the Fleet page lists each shard with what the lake holds of it;
- a store and a lake together: every store page, plus Fleet, the Overview the fleet's;
- PostgreSQL down: one sentence, no traceback; back up: the same open dashboard reads it again;
- `memstore ui --lake L`.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from memstore import Memory
from memstore.dashboard.main import PAGES
from memstore.testing.postgres import PostgresCluster, available

pytest.importorskip("duckdb_extension_ducklake")
pytest.importorskip("duckdb_extension_postgres")
pytestmark = pytest.mark.skipif(not available(), reason="PostgreSQL is not installed (apt-get install postgresql)")

import memstore.lake as lake

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
CONFIG = {"embedder": {"provider": "hashing"}}
SHARDS = {   # shard -> user -> facts (the last of a user's list supersedes nothing: infer=False adds)
    "east": {"alice": ["Alice lives in Paris", "Alice likes tea"], "bob": ["Bob plays chess"]},
    "west": {"carol": ["Carol sings in a choir", "Carol has a dog", "Carol runs"]},
}


@pytest.fixture(scope="module")
def pg():
    with PostgresCluster() as cluster:
        yield cluster


def make_fleet(pg: PostgresCluster, folder: Path, db: str) -> tuple[str, dict[str, str]]:
    """A lake `db` with the SHARDS published into it; (lake name, {shard: store path})."""
    name = "postgres:" + pg.create_database(db)
    stores = {}
    for shard, users in SHARDS.items():
        path = str(folder / f"{shard}.duckdb")
        with Memory(path, config=CONFIG) as m:
            for user, facts in users.items():
                for fact in facts:
                    m.add(fact, user_id=user, infer=False)
            lake.publish(m.db, name, data_path=folder / "lake", shard=shard)
        stores[shard] = path
    return name, stores


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    return make_fleet(pg, tmp_path_factory.mktemp("fleet"), "lake_dashboard")


def app(monkeypatch, lake_name: str, store: str | None = None, page: str | None = None) -> AppTest:
    monkeypatch.setenv("MEMSTORE_LAKE", lake_name)
    if store:
        monkeypatch.setenv("MEMSTORE_PATH", store)
    else:
        monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    if page:
        at.radio(key="page").set_value(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {str(m.label): str(m.value) for m in at.metric}


def table(at: AppTest, key: str) -> pl.DataFrame:
    """The table shown by widgets.show_table(key=...): the dataframe just before its CSV button."""
    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)
    els = list(walk(at._tree))
    at_button = next(i for i, e in enumerate(els) if e.type == "download_button" and e.key == f"csv_{key}")
    return pl.from_pandas(next(e for e in reversed(els[:at_button]) if e.type == "dataframe").value)


def texts(at: AppTest, kind: str) -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))


def test_a_lake_alone_shows_every_shard_on_the_overview(fleet, monkeypatch):
    name, stores = fleet
    at = app(monkeypatch, name)
    assert at.radio(key="page").options == ["Overview", "Fleet"]          # no store pages, no demo store
    assert at.title[0].value == "Overview — the whole fleet"
    want = []
    for shard, path in stores.items():
        with Memory(path, config=CONFIG) as m:
            own = m.frame("scope_summary").select("user_id", "memories", "current", "extraction_runs")
        want += [(shard, *row) for row in own.rows()]
    shown = table(at, "overview_scopes").select("shard", "user_id", "memories", "current", "extraction_runs")
    assert sorted(shown.rows()) == sorted(want)
    assert metrics(at)["shards"] == "2"
    assert metrics(at)["scopes"] == "3" and metrics(at)["current memories"] == "6"
    assert "messages are not published to this lake" in texts(at, "caption")


def test_the_fleet_page_lists_each_shard(fleet, monkeypatch):
    name, _ = fleet
    at = app(monkeypatch, name, page="Fleet")
    shards = table(at, "fleet_shards").sort("shard")
    assert shards["shard"].to_list() == ["east", "west"]
    assert shards["memories"].to_list() == [3, 3] and shards["store_memories"].to_list() == [3, 3]
    assert shards["scopes"].to_list() == [2, 1] and shards["publishes"].to_list() == [1, 1]
    assert shards["last_publish"].null_count() == 0
    assert metrics(at)["memories in the lake"] == "6"


@pytest.mark.filterwarnings("ignore:store .* was embedded with:RuntimeWarning")  # the dashboard's default embedder
def test_a_store_and_a_lake_together(fleet, monkeypatch, tmp_path):
    name, stores = fleet
    store = tmp_path / "east-copy.duckdb"
    shutil.copyfile(stores["east"], store)
    at = app(monkeypatch, name, store=str(store))
    assert at.radio(key="page").options == [p.TITLE for p in PAGES] + ["Fleet"]
    assert at.title[0].value == "Overview — the whole fleet"
    captions = texts(at, "caption")
    assert "lake: `postgres:dbname=lake_dashboard" in captions and f"store: `{store}`" in captions
    at.radio(key="page").set_value("Memories").run()                    # the store's own pages still work
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="scope").options == ["user:alice", "user:bob"]


def test_a_publish_and_a_forget_after_the_dashboard_opened_are_seen(pg, tmp_path, monkeypatch):
    name, stores = make_fleet(pg, tmp_path, "lake_dashboard_changes")
    at = app(monkeypatch, name)
    assert metrics(at)["current memories"] == "6"
    with Memory(stores["west"], config=CONFIG) as m:
        m.add("Dan collects stamps", user_id="dan", infer=False)
        lake.publish(m.db, name)
    with Memory(stores["east"], config=CONFIG) as m:
        receipt = m.forget(user_id="alice")              # reaches the lake (the store publishes into it)
        assert receipt["verification"]["downstream"]["lake"]["ok"], receipt["verification"]["downstream"]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert metrics(at)["current memories"] == "5" and metrics(at)["scopes"] == "3"
    shown = table(at, "overview_scopes")
    assert sorted(shown["scope"].to_list()) == ["user:bob", "user:carol", "user:dan"]


def test_postgres_down_is_one_sentence_and_the_open_dashboard_recovers(fleet, pg, monkeypatch):
    name, _ = fleet
    at = app(monkeypatch, name)
    pg.pause()
    try:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert "Reading the lake failed" in texts(at, "error") and "PostgreSQL did not answer" in texts(at, "error")
    finally:
        pg.resume()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "error") and metrics(at)["current memories"] == "6"
    wrong = app(monkeypatch, name.replace("lake_dashboard", "no_such_lake"))
    assert "Cannot read the lake" in texts(wrong, "error")


def test_ui_lake_flag(tmp_path, monkeypatch):
    from memstore.cli import ui

    parser = argparse.ArgumentParser()
    ui.register(parser.add_subparsers(dest="command"))
    monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    monkeypatch.delenv("MEMSTORE_LAKE", raising=False)
    args = parser.parse_args(["ui", "--lake", "postgres:dbname=lake host=db1"])
    _, env = ui.streamlit_command(args)
    assert env["MEMSTORE_LAKE"] == "postgres:dbname=lake host=db1" and "MEMSTORE_PATH" not in env
    assert ui.lake_only(args)                              # no store: no server started, no demo store built
    with_store = parser.parse_args(["ui", "--lake", "postgres:dbname=lake", "--store", str(tmp_path / "s.duckdb")])
    assert not ui.lake_only(with_store)
    assert not ui.lake_only(parser.parse_args(["ui"]))
