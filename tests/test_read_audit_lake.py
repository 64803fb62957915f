"""The audit of reads and the lake (DuckLake on a real PostgreSQL): `publish` leaves reads out unless
asked; asked, they reach the lake, and forget() erases a user's reads there too (no byte of their
queries in the lake's files or PostgreSQL's data directory)."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.testing.postgres import PostgresCluster, available

pytest.importorskip("duckdb_extension_ducklake")
pytest.importorskip("duckdb_extension_postgres")
pytestmark = pytest.mark.skipif(not available(), reason="PostgreSQL is not installed (apt-get install postgresql)")

from test_lake import marker_bytes

import memstore.lake as lake
from memstore.lake.tables import DEFAULT_TABLES

CONFIG = {"embedder": {"provider": "hashing"}, "audit": {"reads": "on"}}


def test_reads_reach_the_lake_only_when_asked_and_forget_erases_them_there(tmp_path):
    marker = "Zorvexalith"
    with PostgresCluster() as pg:
        name = "postgres:" + pg.create_database("lake_reads")
        data = tmp_path / "lake"
        m = Memory(str(tmp_path / "s.duckdb"), config=CONFIG)
        m.add("I keep an amulet in the cellar", user_id="alice", infer=False)
        m.add("Bob plays the harp", user_id="bob", infer=False)
        m.search(f"where is my {marker} amulet", user_id="alice")
        m.search("harp lessons", user_id="bob")
        m.read_log.flush()
        lake.publish(m.db, name, data_path=data)
        with lake.connect(name) as lk:
            tables = {r[0] for r in lk.sql("SHOW TABLES").fetchall()}
        assert "reads" not in tables and "memories" in tables
        lake.publish(m.db, name, data_path=data, tables=(*DEFAULT_TABLES, "reads"))
        with lake.connect(name) as lk:
            got = dict(lk.sql("SELECT user_id, count(*) FROM reads WHERE method = 'search' GROUP BY 1").fetchall())
        assert got == {"alice": 1, "bob": 1}
        pg.psql("CHECKPOINT")
        assert marker_bytes([data], marker)
        receipt = m.forget(user_id="alice")
        copy = receipt["verification"]["downstream"]["lake"]
        assert copy["ok"] and copy["rows_removed"]["reads"] >= 1 and receipt["verified"]
        assert marker_bytes([data, pg.data_dir], marker) == {}
        with lake.connect(name) as lk:
            left = dict(lk.sql("SELECT user_id, count(*) FROM reads WHERE method = 'search' GROUP BY 1").fetchall())
        assert left == {"bob": 1}
        m.close()
