"""m.sql() reads nothing outside the store and never installs or loads an extension, enforced by
DuckDB itself (a locked-down connection), not only by the sqlglot check: a matrix of file
readers, table functions, SUMMARIZE / DESCRIBE / PIVOT / COPY / ATTACH / INSTALL / LOAD / SET /
PRAGMA / CALL, macros and comment tricks. No test runs a query on a remote URL."""
from __future__ import annotations

import duckdb
import pytest

from memstore import Memory
from memstore.analysis.readonly_sql import locked_connection
from memstore.cli import main as cli
from memstore.core.errors import MemstoreError, QueryError

SECRET = "TOPSECRET-4242"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("hsql")
    (root / "secret.csv").write_text(f"a,b\n1,{SECRET}\n")
    (root / "secret.json").write_text(f'[{{"a": "{SECRET}"}}]')
    (root / "secret.txt").write_text(SECRET)
    con = duckdb.connect()
    con.execute(f"COPY (SELECT '{SECRET}' AS a) TO '{root / 'secret.parquet'}' (FORMAT parquet)")
    con.execute(f"ATTACH '{root / 'other.duckdb'}' AS o")
    con.execute(f"CREATE TABLE o.t AS SELECT '{SECRET}' AS a")
    con.close()
    m = Memory(str(root / "store.duckdb"), config={"embedder": {"provider": "hashing"}})
    m.add("Olga waters plants", user_id="olga", infer=False)
    yield {"root": root, "m": m}
    m.close()


HOSTILE = [
    "SUMMARIZE '{root}/secret.csv'",
    "SUMMARIZE SELECT * FROM '{root}/secret.csv'",
    "SELECT * FROM (SUMMARIZE '{root}/secret.csv')",
    "SELECT min FROM (SUMMARIZE '{root}/secret.json')",
    "SUMMARIZE '{root}/secret.parquet'",
    "SUMMARIZE '{root}/*.csv'",
    "DESCRIBE '{root}/secret.csv'",
    "DESCRIBE SELECT * FROM '{root}/secret.csv'",
    "SELECT * FROM '{root}/secret.csv'",
    'SELECT * FROM "{root}/secret.csv"',
    "SELECT * FROM '{root}/secret.json'",
    "SELECT * FROM '{root}/secret.parquet'",
    "SELECT * FROM '{root}/*.csv'",
    "FROM '{root}/secret.csv'",
    "SELECT * FROM read_csv('{root}/secret.csv')",
    "SELECT * FROM read_csv_auto('{root}/secret.csv')",
    "SELECT * FROM read_json('{root}/secret.json')",
    "SELECT * FROM read_json_auto('{root}/secret.json')",
    "SELECT * FROM read_parquet('{root}/secret.parquet')",
    "SELECT * FROM parquet_scan('{root}/secret.parquet')",
    "SELECT * FROM parquet_metadata('{root}/secret.parquet')",
    "SELECT * FROM read_text('{root}/secret.txt')",
    "SELECT * FROM read_blob('{root}/secret.txt')",
    "SELECT * FROM glob('{root}/*')",
    "SELECT * FROM sniff_csv('{root}/secret.csv')",
    "SELECT * FROM query('SELECT * FROM ''{root}/secret.csv''')",
    "SELECT * FROM query_table('{root}/secret.csv')",
    "WITH x AS (SELECT * FROM '{root}/secret.csv') SELECT * FROM x",
    "SELECT * FROM memories, LATERAL (SELECT * FROM '{root}/secret.csv')",
    "SELECT (SELECT b FROM '{root}/secret.csv') AS leak",
    "SELECT * FROM memories WHERE memory IN (SELECT b FROM '{root}/secret.csv')",
    "PIVOT '{root}/secret.csv' ON a USING first(b)",
    "SELECT /* harmless */ * FROM '{root}/secret.csv' -- trailing",
    "SELECT * FROM/**/'{root}/secret.csv'",
    "SELECT 1 /* ; */; SELECT * FROM '{root}/secret.csv'",
    "COPY (SELECT * FROM memories) TO '{root}/leak.csv'",
    "ATTACH '{root}/other.duckdb' AS o",
    "SELECT * FROM '{root}/other.duckdb'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "FORCE INSTALL httpfs",
    "SET enable_external_access = true",
    "SET autoinstall_known_extensions = true",
    "RESET enable_external_access",
    "PRAGMA enable_profiling",
    "PRAGMA show_tables",
    "CALL pragma_version()",
    "CREATE MACRO leak() AS TABLE SELECT * FROM '{root}/secret.csv'",
    "CREATE TEMP MACRO m(x) AS x",
    "SELECT getenv('HOME')",
    "SELECT * FROM duckdb_secrets()",
    "SELECT load_extension('httpfs')",
    "EXPORT DATABASE '{root}/dump'",
    "SELECT * FROM iceberg_scan('{root}/x')",
    "SELECT * FROM sqlite_scan('{root}/x.db', 't')",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_query_is_refused_and_shows_nothing_of_the_file(env, query):
    q = query.format(root=env["root"])
    try:
        out = env["m"].sql(q)
    except MemstoreError as exc:
        assert SECRET not in str(exc)
    else:
        assert SECRET not in str(out.to_dicts()), f"{q!r} returned the file's content"
    assert not (env["root"] / "leak.csv").exists() and not (env["root"] / "dump").exists()


@pytest.mark.parametrize("query", [q for q in HOSTILE if "MACRO" not in q and "getenv" not in q])
def test_duckdb_itself_refuses_file_and_extension_access_on_the_analyst_connection(env, query):
    """Layer 3 alone (the sqlglot check bypassed): the connection m.sql() runs on."""
    con = locked_connection()
    con.register("memories", env["m"].db.arrow("m", sql="SELECT id, memory FROM memories"))
    try:
        out = con.rows("hostile", sql=query.format(root=env["root"]))
    except QueryError as exc:
        assert isinstance(exc.cause, duckdb.Error)
        return
    finally:
        con.close()
    assert SECRET not in str(out)


@pytest.mark.parametrize("allow_files", [False, True])
def test_the_analyst_connection_never_installs_or_loads_extensions(allow_files):
    con = locked_connection(allow_files=allow_files)
    settings = dict(con.rows("settings", sql="SELECT name, value FROM duckdb_settings() WHERE name IN "
                             "('autoinstall_known_extensions', 'autoload_known_extensions', "
                             "'allow_community_extensions', 'enable_external_access', 'lock_configuration')"))
    con.close()
    assert settings["autoinstall_known_extensions"] == "false"
    assert settings["autoload_known_extensions"] == "false"
    assert settings["allow_community_extensions"] == "false"
    assert settings["lock_configuration"] == "true"
    assert settings["enable_external_access"] == ("true" if allow_files else "false")


def test_allow_files_reads_a_local_file_on_purpose(env):
    out = env["m"].sql(f"SELECT b FROM '{env['root']}/secret.csv'", allow_files=True)
    assert out["b"].to_list() == [SECRET]
    joined = env["m"].sql(f"SELECT count(*) AS n FROM memories, '{env['root']}/secret.csv'", allow_files=True)
    assert joined["n"].to_list() == [1]


def test_store_queries_still_work_summarize_describe_pivot_params(env):
    m = env["m"]
    assert "memory" in m.sql("DESCRIBE memories")["column_name"].to_list()
    assert "memory" in m.sql("SUMMARIZE memories")["column_name"].to_list()
    assert m.sql("SELECT count(*) AS n FROM memories WHERE user_id = $u", {"u": "olga"})["n"].to_list() == [1]
    assert m.sql("SELECT user_id, count(*) AS n FROM memories GROUP BY ALL")["n"].to_list() == [1]
    assert m.sql("SELECT m.memory, h.event FROM memories m JOIN history h ON h.memory_id = m.id")["event"].to_list() == ["ADD"]


def test_cli_sql_refuses_summarize_of_a_file(env, capsys):
    env["m"].close()
    try:
        rc = cli(["sql", f"SUMMARIZE '{env['root']}/secret.csv'", "--store", str(env["root"] / "store.duckdb")])
        out = capsys.readouterr()
        assert rc != 0 and SECRET not in out.out + out.err
    finally:
        env["m"] = Memory(str(env["root"] / "store.duckdb"), config={"embedder": {"provider": "hashing"}})
