"""`Database` is the only door to DuckDB: production code outside memstore/store/database.py never
executes SQL on a connection itself, and the tracer sees every statement a public call runs
(checked against DuckDB's own query log, so a statement that slipped past `Database` is named)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import memstore
from memstore import Memory

ROOT = Path(memstore.__file__).resolve().parent
# file (relative to memstore/) -> how many direct calls it may make, and why
ALLOWED = {
    "store/database.py": None,               # the door itself (None: any number)
    "store/scratch.py": None,                # the same door on a private in-memory DuckDB
    "store/extensions.py": 1,                # LOAD of an extension file while connecting
    "lake/session.py": None,                 # the lake's own door: DuckDB with DuckLake over PostgreSQL attached
    "ingest/mem0_import.py": None,           # sqlite3: reads mem0's history database
    "integrations/mem0_fixture.py": None,    # sqlite3: writes a mem0-shaped fixture
}
ALLOWED_DIRS = ("testing/",)
# Owned by the write-core rewrite (issue 18); each must still bypass, so the entry is dropped with the fix.
PENDING: set[str] = set()        # modules still allowed past Database while being moved (none left)
EXECUTE = {"execute", "executemany"}
REGISTER = {"register", "unregister"}
CONNECTION_NAMES = {"con", "cur", "cursor", "conn", "connection", "_con", "raw_connection"}


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    return None


def direct_sql(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every statement sent past `Database` in a module's syntax tree.

    >>> direct_sql(ast.parse("db.con.execute('DELETE FROM t')\\nx = duckdb.connect(':memory:')"))
    [(1, 'db.con'), (1, 'execute on con'), (2, 'duckdb.connect')]
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            if attr in EXECUTE:
                found.append((node.lineno, f"{attr} on {_last_name(owner)}"))
            elif attr in REGISTER and _last_name(owner) in CONNECTION_NAMES:
                found.append((node.lineno, f"{attr} on {_last_name(owner)}"))
            elif isinstance(owner, ast.Name) and owner.id == "duckdb" and attr in ("connect", "sql", "query"):
                found.append((node.lineno, f"duckdb.{attr}"))
        elif isinstance(node, ast.Attribute) and node.attr in ("con", "_con", "raw_connection") \
                and _last_name(node.value) in ("db", "database"):
            found.append((node.lineno, f"{_last_name(node.value)}.{node.attr}"))
    return sorted(found)


def test_no_production_module_executes_sql_past_database():
    offenders, still_pending = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(ALLOWED_DIRS):
            continue
        hits = direct_sql(ast.parse(path.read_text(encoding="utf-8")))
        limit = ALLOWED.get(rel, 0)
        if rel in PENDING:
            still_pending |= {rel} if hits else set()
            continue
        if limit is not None and len(hits) > limit:
            offenders += [f"memstore/{rel}:{line}: {what}" for line, what in hits]
    assert not offenders, ("SQL sent past Database (use db.run / rows / scalar / insert_arrow / run_instance / "
                           "snapshot, or db.scratch() for a private in-memory DuckDB):\n" + "\n".join(offenders))
    assert still_pending == PENDING, f"no longer bypassing Database, drop from PENDING: {PENDING - still_pending}"


def test_the_scan_finds_a_bypass():
    code = "def f(db):\n    with db.transaction() as con:\n        con.execute('DELETE FROM memories')\n"
    assert direct_sql(ast.parse(code)) == [(3, "execute on con")]
    assert direct_sql(ast.parse("db.run('x', sql='SELECT 1')")) == []


# -- the tracer sees what DuckDB ran ----------------------------------------------------------------
FACTS = ["lives in Boston", "is vegetarian", "plays the cello"]
TRANSACTION_WORDS = ("BEGIN TRANSACTION", "COMMIT", "ROLLBACK")   # Database.transaction's own
UNREGISTER = re.compile(r"^DROP VIEW \w+$")      # what DuckDB runs for unregister() of an Arrow table


@pytest.fixture
def m(store_path):
    mem = Memory(store_path, config={"embedder": {"provider": "hashing"}})
    for fact in FACTS:
        for user in ("ann", "bob"):
            mem.add(f"{user.title()} {fact}", user_id=user, infer=False)
    yield mem
    mem.close()


def _traced_vs_logged(m: Memory, call) -> tuple[list[str], list[str]]:
    """Run `call` with a tracer and DuckDB's query log on; return (traced names, untraced queries)."""
    traced: list[tuple[str, str]] = []
    m.db.trace = lambda name, sql, params, seconds: traced.append((name, sql))
    log_con = m.db.raw_connection.cursor()     # tests may talk to DuckDB directly
    log_con.execute("CALL truncate_duckdb_logs()")
    log_con.execute("CALL enable_logging('QueryLog')")
    try:
        call()
    finally:
        m.db.trace = None
        log_con.execute("CALL disable_logging()")
    logged = [r[0].strip() for r in log_con.execute(
        "SELECT message FROM duckdb_logs WHERE type = 'QueryLog' ORDER BY timestamp").fetchall()]
    texts = [sql for _, sql in traced]
    missed = [q for q in logged if q not in TRANSACTION_WORDS and not UNREGISTER.match(q) and "duckdb_log" not in q
              and "_logging" not in q and not any(q.rstrip(";") in t for t in texts)]
    return [n for n, _ in traced], missed


def test_optimize_runs_every_statement_through_the_tracer(m):
    if not m.db.has_vss:
        pytest.skip("the VSS extension is not installed")
    m.search_all("cello", top_k=2)              # an HNSW index for optimize to drop and rebuild
    names, missed = _traced_vs_logged(m, m.optimize)
    assert not missed, f"statements that bypassed Database: {missed}"
    assert {"queries/admin/drop_hnsw_index", "optimize:clear:memories", "optimize:refill:entity_postings",
            "queries/set_clustered_rows", "queries/admin/checkpoint", "queries/admin/create_hnsw_index"} <= set(names)


def test_search_all_runs_every_statement_through_the_tracer(m):
    if not m.db.has_vss:
        pytest.skip("the VSS extension is not installed")
    names, missed = _traced_vs_logged(m, lambda: m.search_all("cello", top_k=2))
    assert not missed, f"statements that bypassed Database: {missed}"
    assert {"queries/admin/hnsw_settings", "queries/admin/create_hnsw_index", "search_all_hnsw"} <= set(names)
    names, missed = _traced_vs_logged(m, lambda: m.search_all("cello", top_k=2, exact=True))
    assert not missed and "search_all_exact" in names


def test_reset_runs_every_statement_through_the_tracer(m):
    names, missed = _traced_vs_logged(m, m.reset)
    assert not missed, f"statements that bypassed Database: {missed}"
    assert {"reset:memories", "reset:messages", "reset:entity_postings"} <= set(names)
    assert m.db.scalar("SELECT count(*) FROM memories") == 0


def test_a_write_outside_a_transaction_must_say_so_to_drop_the_cache(m):
    before = m.db.scope_cache.stats["invalidations"]
    m.db.run("read", sql="SELECT count(*) FROM memories")
    assert m.db.scope_cache.stats["invalidations"] == before          # reads never invalidate
    m.db.run("w", sql="UPDATE memories SET memory = memory WHERE false", writes=True)
    assert m.db.scope_cache.stats["invalidations"] == before + 1
    with m.db.transaction("t"):
        m.db.run("w", sql="UPDATE memories SET memory = memory WHERE false", writes=True)
        assert m.db.scope_cache.stats["invalidations"] == before + 1  # the COMMIT does it, once
    assert m.db.scope_cache.stats["invalidations"] == before + 2


ROW_WRITES = {"INSERT", "UPDATE", "DELETE", "MERGE_INTO"}


def test_every_row_write_of_the_public_api_runs_inside_a_transaction(m, tmp_path):
    """So the transaction's COMMIT (not a guess from the SQL text) keeps the scope cache right."""
    import duckdb

    outside: list[str] = []

    def trace(name, sql, params, seconds):
        kinds = {s.type.name for s in duckdb.extract_statements(sql)}
        if kinds & ROW_WRITES and not m.db.in_transaction:
            outside.append(name)

    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "I play the violin"}\n', encoding="utf-8")
    m.db.trace = trace
    try:
        mid = m.add("Cy lives in Oslo", user_id="cy", infer=False)["results"][0]["id"]
        m.update(mid, text="Cy lives in Trondheim")
        keep = m.add("Cy drinks green tea", user_id="cy", infer=False)["results"][0]["id"]
        other = m.add("Cy collects stamps", user_id="cy", infer=False)["results"][0]["id"]
        m.resolve(keep, supersede=[other])
        m.add("Cy owns a cat", user_id="cy", infer=False, expiration_date="2000-01-01")
        m.purge_expired(user_id="cy")
        m.ingest(str(chat), user_id="cy")
        m.set_retention("messages", 30)
        m.apply_retention()
        m.delete(keep)
        m.delete_all(user_id="ann")
        m.export_parquet(tmp_path / "export")
        m.forget(user_id="cy")
        m.doctor(repair=True)
        m.optimize()
        m.reset()
        m.db.run("probe", sql="DELETE FROM memories WHERE false", writes=True)   # the check itself sees one
    finally:
        m.db.trace = None
    assert outside == ["probe"], f"row writes autocommitted outside transaction(): {outside[:-1]}"
