"""`m.sql()`: run one read-only query and return Polars.

DuckDB cannot open a second, read-only connection to a file this process already holds read-write,
so read-only is enforced here, in three layers:

1. DuckDB's own parser must see exactly one statement, of type SELECT (this is what rejects
   `SELECT 1; DROP ...`, and PIVOT, which creates a type first).
2. sqlglot must see a query (SELECT / WITH / UNION / VALUES, or DESCRIBE / SUMMARIZE / SHOW) with no
   write node anywhere, no function that reads files, secrets or the environment (`read_csv`,
   `read_parquet`, `read_text`, `glob`, `query`, `getenv`, ...) and no table that is not one of the
   store's tables or views or a CTE (DuckDB would read `FROM 'file.csv'` as a file).
   `allow_files=True` lifts the file rule, for joining the store with a CSV on purpose.
3. The query runs inside a transaction that is always rolled back.

>>> check_readonly("SELECT count(*) FROM memories", known={"memories"}).sql()
'SELECT COUNT(*) FROM memories'
>>> check_readonly("DELETE FROM memories", known={"memories"})
Traceback (most recent call last):
...
memstore.errors.ReadOnlyError: m.sql() runs read-only queries, not DELETE statements — use the Memory API (add / update / delete / forget) to change the store
"""
from __future__ import annotations

import re
from typing import Any

import duckdb
import polars as pl
import sqlglot
from sqlglot import exp

from memstore.errors import ReadOnlyError

_QUERY_ROOTS = (exp.Query, exp.Values, exp.Subquery, exp.Describe, exp.Summarize, exp.Show)
_WRITE_NODES = tuple(getattr(exp, n) for n in (
    "Insert", "Update", "Delete", "Create", "Drop", "Alter", "Merge", "Copy", "Command", "Pragma", "Set",
    "Attach", "Detach", "Install", "Use", "TruncateTable", "Into", "Transaction", "Commit", "Rollback",
    "LoadData", "Export", "Cache", "Uncache", "Refresh", "Analyze") if hasattr(exp, n))
# Functions that read files or other databases (refused unless allow_files=True).
_FILE_FUNCTIONS = re.compile(r"^(read_\w+|\w+_scan|glob|sniff_csv|parquet_\w+|iceberg_\w+|delta_\w+|ducklake_\w+|"
                             r"sqlite_\w+|postgres_\w+|mysql_\w+|query|query_table|json_execute_serialized_sql)$")
# Functions refused always: secrets, the environment, side effects.
_DENIED_FUNCTIONS = re.compile(r"^(getenv|duckdb_secrets|which_secret|nextval|setseed|checkpoint|force_checkpoint|"
                               r"enable_\w+|disable_\w+|truncate_duckdb_logs|load_extension)$")
_SYSTEM_PREFIXES = ("duckdb_", "pragma_", "sqlite_", "pg_")
_WRITE_HINT = "use the Memory API (add / update / delete / forget) to change the store"


def _function_names(node: exp.Func) -> set[str]:
    if isinstance(node, exp.Anonymous):
        return {str(node.name).lower()}
    return {node.sql_name().lower()}


def check_readonly(sql: str, *, known: set[str], allow_files: bool = False,
                   listed: set[str] | None = None) -> exp.Expression:
    """Parse `sql` and raise ReadOnlyError unless it is one read-only query over `known` relations
    (table and view names, lower-case; `listed`: the ones to name in errors). Returns the parsed tree."""
    if not isinstance(sql, str) or not sql.strip():
        raise ReadOnlyError("m.sql() needs a query string", hint='e.g. m.sql("SELECT count(*) FROM memories")')
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ReadOnlyError(f"m.sql() could not parse the query: {exc}") from exc
    kinds = [st.type.name for st in statements]
    writes = [k for k in kinds if k != "SELECT"]
    if writes:
        raise ReadOnlyError(f"m.sql() runs read-only queries, not {writes[0]} statements", hint=_WRITE_HINT,
                            statement=writes[0])
    if len(statements) != 1:
        raise ReadOnlyError(f"m.sql() runs exactly one statement; got {len(statements)}",
                            hint="send one query per call (no ';'-separated scripts)", statements=len(statements))
    try:
        trees = [t for t in sqlglot.parse(sql, dialect="duckdb") if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise ReadOnlyError(f"m.sql() could not check that the query is read-only: {exc}",
                            hint="rewrite it as a plain SELECT / WITH query") from exc
    if len(trees) != 1:
        raise ReadOnlyError(f"m.sql() runs exactly one statement; got {len(trees)}")
    tree = trees[0]
    if not isinstance(tree, _QUERY_ROOTS):
        raise ReadOnlyError(f"m.sql() runs read-only queries, not {type(tree).__name__.upper()} statements",
                            hint=_WRITE_HINT, statement=type(tree).__name__)
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise ReadOnlyError(f"m.sql() runs read-only queries; found {type(node).__name__.upper()} in it",
                                hint=_WRITE_HINT, statement=type(node).__name__)
        if isinstance(node, exp.Func):
            for fname in _function_names(node):
                if _DENIED_FUNCTIONS.match(fname):
                    raise ReadOnlyError(f"m.sql() does not allow {fname}()", function=fname,
                                        hint="it reads secrets or the environment, or changes state")
                if _FILE_FUNCTIONS.match(fname) and not allow_files:
                    raise ReadOnlyError(f"m.sql() does not read files: {fname}() refused", function=fname,
                                        hint="pass allow_files=True (CLI: --allow-files) to read files on purpose")
    ctes = {str(c.alias).lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier):
            continue                          # a table function, checked above
        name = str(ident.this).lower()
        if name in ctes and not table.args.get("db"):
            continue
        if name in known:
            continue
        if allow_files:
            continue
        names = sorted(listed if listed is not None else (k for k in known if not k.startswith(_SYSTEM_PREFIXES)))
        raise ReadOnlyError(f"m.sql() reads the store's tables and views only: {ident.this!r} is neither",
                            hint=f"known: {', '.join(names)}; pass allow_files=True (CLI: --allow-files) to read a file",
                            relation=str(ident.this))
    return tree


def known_relations(db: Any) -> tuple[set[str], set[str]]:
    """Lower-case names of every table and view a query may read (system views included), and of
    the store's own ones (for error messages)."""
    rows = db.rows("known_relations", sql=(
        "SELECT table_name, internal FROM duckdb_tables() UNION ALL SELECT view_name, internal FROM duckdb_views()"))
    return {str(r[0]).lower() for r in rows}, {str(r[0]).lower() for r in rows if not r[1]}


def run_readonly(db: Any, sql: str, params: Any = None, *, allow_files: bool = False) -> pl.DataFrame:
    """Check `sql` (see the module docstring), run it in a transaction that is rolled back, return Polars."""
    from memstore.store.views import ensure_views

    ensure_views(db)
    known, listed = known_relations(db)
    check_readonly(sql, known=known, allow_files=allow_files, listed=listed)
    con = db.con
    con.execute("BEGIN TRANSACTION")
    try:
        table = db.run("sql", params, sql=sql).to_arrow_table()
    finally:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:  # the failed query already ended the transaction
            pass
    return pl.from_arrow(table)  # type: ignore[return-value]
