"""m.sql(): one read-only query → Polars; writes, scripts and file reads are refused and change nothing."""
from __future__ import annotations

import polars as pl
import pytest

from memstore import Memory
from memstore.core.errors import QueryError, ReadOnlyError

CONFIG = {"embedder": {"provider": "hashing"}}   # SQL does not depend on what vectors mean


def _fill(mem: Memory) -> None:
    mem.add("I'm vegetarian and I live in Boston", user_id="alice")
    mem.add([{"role": "user", "content": "Bob lives in Paris"}], user_id="bob", infer=False)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    """One store for the module: every test here leaves it as it found it (that is what they check)."""
    mem = Memory(tmp_path_factory.mktemp("sql") / "store.duckdb", config=CONFIG)
    _fill(mem)
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def closed_store(tmp_path_factory):
    """Path of a filled store that no Memory holds open (for read-only opens and the CLI)."""
    path = str(tmp_path_factory.mktemp("sql_closed") / "store.duckdb")
    with Memory(path, config=CONFIG) as mem:
        _fill(mem)
    return path


def _counts(m) -> dict[str, int]:
    tables = [r[0] for r in m.db.rows("t", sql="SELECT table_name FROM duckdb_tables() ORDER BY 1")]
    return {t: m.db.scalar(f'SELECT count(*) FROM "{t}"') for t in tables}


def test_select_returns_polars_with_bound_parameters(m):
    df = m.sql("SELECT user_id, count(*) AS n FROM memories GROUP BY ALL ORDER BY user_id")
    assert isinstance(df, pl.DataFrame)
    assert df.to_dicts() == [{"user_id": "alice", "n": 2}, {"user_id": "bob", "n": 1}]
    bob = m.sql("SELECT memory FROM memories WHERE user_id = $u", {"u": "bob"})
    assert bob["memory"].to_list() == ["Bob lives in Paris"]
    cte = m.sql("WITH a AS (SELECT id FROM memories) SELECT count(*) AS n FROM a "
                "UNION ALL SELECT count(*) FROM history")
    assert cte["n"].to_list() == [3, 3]


WRITES = [
    "INSERT INTO memories (id) VALUES ('x')",
    "UPDATE memories SET memory = 'hacked'",
    "DELETE FROM memories",
    "CREATE TABLE stolen AS SELECT * FROM memories",
    "CREATE VIEW v AS SELECT 1",
    "DROP TABLE memories",
    "ALTER TABLE memories ADD COLUMN x INTEGER",
    "TRUNCATE memories",
    "ATTACH ':memory:' AS other",
    "DETACH other",
    "COPY memories TO '{tmp}/leak.csv'",
    "EXPORT DATABASE '{tmp}/dump'",
    "PRAGMA enable_profiling",
    "SET threads = 1",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CHECKPOINT",
    "CALL pragma_version()",
    "VACUUM",
    "BEGIN TRANSACTION",
    "USE memory",
    "SELECT 1; DELETE FROM memories",
    "SELECT * FROM memories; DROP TABLE history",
    "PIVOT memories ON user_id USING count(*)",
    "EXPLAIN ANALYZE DELETE FROM memories",
]


@pytest.mark.parametrize("statement", WRITES)
def test_writes_and_scripts_are_refused_and_change_nothing(m, tmp_path, statement):
    out = tmp_path / "out"
    out.mkdir()
    before = _counts(m)
    with pytest.raises(ReadOnlyError, match=r"m\.sql\(\) runs"):
        m.sql(statement.format(tmp=out))
    assert _counts(m) == before
    assert list(out.iterdir()) == []
    assert m.search("Boston", user_id="alice")["results"]        # the store still answers


FILE_READS = [
    "SELECT * FROM read_csv('{csv}')",
    "SELECT * FROM read_csv_auto('{csv}')",
    "SELECT * FROM read_text('{csv}')",
    "SELECT * FROM read_blob('{csv}')",
    "SELECT * FROM read_json_auto('{csv}')",
    "SELECT * FROM read_parquet('{csv}')",
    "SELECT * FROM parquet_scan('{csv}')",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM '{csv}'",
    "SELECT * FROM \"{csv}\"",
    "SELECT * FROM memories WHERE id IN (SELECT * FROM read_csv('{csv}'))",
    "SELECT * FROM query('SELECT * FROM read_csv(''{csv}'')')",
]


@pytest.mark.parametrize("statement", FILE_READS)
def test_file_reads_are_refused_unless_asked_for(m, tmp_path, statement):
    csv = tmp_path / "people.csv"
    csv.write_text("name\nsecret-row\n")
    query = statement.format(csv=csv, dir=tmp_path)
    with pytest.raises(ReadOnlyError, match="allow_files=True"):
        m.sql(query)


def test_allow_files_reads_a_csv_joined_with_the_store(m, tmp_path):
    csv = tmp_path / "users.csv"
    csv.write_text("user_id,team\nalice,red\nbob,blue\n")
    df = m.sql(f"SELECT u.team, count(*) AS n FROM memories m JOIN read_csv('{csv}') u USING (user_id) "
               "GROUP BY ALL ORDER BY u.team", allow_files=True)
    assert df.to_dicts() == [{"team": "blue", "n": 1}, {"team": "red", "n": 2}]
    with pytest.raises(ReadOnlyError):          # still read-only
        m.sql(f"COPY memories TO '{tmp_path}/out.csv'", allow_files=True)


@pytest.mark.parametrize("statement", ["SELECT getenv('HOME')", "SELECT * FROM duckdb_secrets()",
                                       "SELECT * FROM force_checkpoint()"])
def test_secrets_environment_and_side_effects_refused_even_with_files_allowed(m, statement):
    with pytest.raises(ReadOnlyError, match="does not allow"):
        m.sql(statement, allow_files=True)


def test_unknown_table_is_a_clear_error(m):
    with pytest.raises(ReadOnlyError, match="'memorys' is neither.*known: .*memories"):
        m.sql("SELECT * FROM memorys")


def test_documented_views_are_queryable(m):
    degrees = m.sql("SELECT entity, degree FROM entity_degrees WHERE user_id = 'bob' ORDER BY entity")
    assert degrees.height >= 1 and set(degrees["degree"]) == {1}
    outcomes = m.sql("SELECT outcome, count(*) AS n FROM extraction_outcomes GROUP BY ALL ORDER BY outcome")
    assert outcomes.to_dicts() == [{"outcome": "added", "n": 3}]


def test_failed_query_leaves_the_store_usable(m):
    with pytest.raises(QueryError, match="no_such_column"):
        m.sql("SELECT no_such_column FROM memories")
    added = m.add([{"role": "user", "content": "Carol likes tea"}], user_id="carol", infer=False)
    assert m.sql("SELECT count(*) AS n FROM memories")["n"][0] == 4
    m.delete(added["results"][0]["id"])
    assert m.sql("SELECT count(*) AS n FROM memories")["n"][0] == 3


def test_read_only_store_gets_views_and_refuses_writes(closed_store):
    with Memory(closed_store, config=dict(CONFIG, read_only=True)) as ro:
        assert ro.sql("SELECT count(*) AS n FROM entity_degrees WHERE user_id = 'bob'")["n"][0] >= 1
        assert ro.frame("extraction_outcomes", user_id="bob")["outcome"].to_list() == ["added"]
        with pytest.raises(ReadOnlyError):
            ro.sql("DELETE FROM memories")


def test_cli_sql_prints_rows_and_refuses_writes(closed_store, monkeypatch, capsys):
    import memstore.cli.analysis as cli_analysis
    from memstore.cli import main

    path = closed_store

    def open_hashing(args, **config):
        return Memory(args.store, config={**CONFIG, **config})

    monkeypatch.setattr(cli_analysis, "open_memory", open_hashing)
    assert main(["sql", "SELECT user_id, count(*) AS n FROM memories GROUP BY ALL ORDER BY 1",
                 "--store", path, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["user_id,n", "alice,2", "bob,1"]
    assert main(["sql", "DROP TABLE memories", "--store", path]) == 1
    assert "read-only" in capsys.readouterr().err
    assert main(["sql", "SELECT * FROM read_text('/etc/hostname')", "--store", path]) == 1
    assert "--allow-files" in capsys.readouterr().err


def test_cli_sql_on_a_missing_store_says_so(tmp_path, capsys):
    from memstore.cli import main

    assert main(["sql", "SELECT 1", "--store", str(tmp_path / "nope.duckdb")]) == 1
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "nope.duckdb").exists()
