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
3. DuckDB itself enforces it: the query runs on a fresh in-memory connection with
   enable_external_access=false (unless allow_files), extension auto-install/auto-load off and the
   configuration locked; the store relations the query names are handed to it as Arrow (only the
   columns it can refer to), so it cannot reach the store file, the file system or the network.

>>> check_readonly("SELECT count(*) FROM memories", known={"memories"}).sql()
'SELECT COUNT(*) FROM memories'
>>> check_readonly("DELETE FROM memories", known={"memories"})
Traceback (most recent call last):
...
memstore.core.errors.ReadOnlyError: m.sql() runs read-only queries, not DELETE statements — use the Memory API (add / update / delete / forget) to change the store
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl
import sqlglot
from sqlglot import exp

from memstore.core.errors import QueryError, ReadOnlyError
from memstore.store.scratch import Scratch

if TYPE_CHECKING:
    from memstore.store.database import Database

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


def known_relations(db: Database) -> tuple[set[str], set[str]]:
    """Lower-case names of every table and view a query may read (system views included), and of
    the store's own ones (for error messages)."""
    rows = db.rows("known_relations", sql=(
        "SELECT table_name, internal FROM duckdb_tables() UNION ALL SELECT view_name, internal FROM duckdb_views()"))
    return {str(r[0]).lower() for r in rows}, {str(r[0]).lower() for r in rows if not r[1]}


def run_readonly(db: Database, sql: str, params: Any = None, *, allow_files: bool = False) -> pl.DataFrame:
    """Check `sql` (see the module docstring) and run it on a locked-down connection, return Polars."""
    from memstore.store.views import ensure_views

    ensure_views(db)
    known, listed = known_relations(db)
    tree = check_readonly(sql, known=known, allow_files=allow_files, listed=listed)
    own = {n for n in listed}
    used = _store_relations(tree, own)
    scratch = locked_connection(allow_files=allow_files, trace=getattr(db, "trace", None))
    try:
        columns = _needed_columns(tree)
        for pruned in ((columns, None) if columns is not None else (None,)):
            _load_relations(db, scratch, used, pruned)
            try:
                return pl.from_arrow(scratch.run("query", params, sql=sql).to_arrow_table())  # type: ignore[return-value]
            except QueryError as exc:
                if isinstance(exc.cause, duckdb.BinderException) and pruned is not None:
                    continue             # a column the pruning missed: load whole relations, once
                raise _query_error(sql, params, exc.cause) from exc.cause
        raise AssertionError("unreachable")
    finally:
        scratch.close()


# -- layer 3: DuckDB enforces it --------------------------------------------------------------------
LOCKED_SETTINGS = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                   "allow_community_extensions": "false", "allow_unsigned_extensions": "false"}


def locked_connection(*, allow_files: bool = False, trace: Any = None) -> Scratch:
    """A fresh in-memory DuckDB for one analyst query: it never auto-installs or auto-loads an
    extension, cannot touch the file system unless `allow_files` (enable_external_access=false:
    file readers, COPY, ATTACH, INSTALL, LOAD all fail in DuckDB itself), and its configuration is
    locked (SET cannot undo any of it). The store's relations the query names are handed to it
    as Arrow, so nothing it does can reach the store file.

    >>> scratch = locked_connection()
    >>> scratch.rows("doc", sql="SELECT current_setting('enable_external_access'), "
    ...                     "current_setting('autoinstall_known_extensions')")
    [(False, False)]
    """
    config = dict(LOCKED_SETTINGS)
    if not allow_files:
        config["enable_external_access"] = "false"
    scratch = Scratch("sql", config=config, trace=trace)
    scratch.run("lock", sql="SET lock_configuration = true")
    return scratch


def _store_relations(tree: exp.Expression, own: set[str]) -> set[str]:
    ctes = {str(c.alias).lower() for c in tree.find_all(exp.CTE)}
    out = set()
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier):
            name = str(table.this.this).lower()
            if name in own and not (name in ctes and not table.args.get("db")):
                out.add(name)
    for col in tree.find_all(exp.Column):          # DESCRIBE/SUMMARIZE name tables as columns sometimes
        if str(col.name).lower() in own and not col.table:
            out.add(str(col.name).lower())
    return out


def _needed_columns(tree: exp.Expression) -> set[str] | None:
    """Lower-case column names the query can refer to, or None when it may need every column
    (`*`, DESCRIBE / SUMMARIZE / PIVOT, COLUMNS(...), a row as a struct)."""
    if not isinstance(tree, (exp.Query, exp.Subquery)) or tree.find(exp.Pivot) is not None:
        return None
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return None
    for fn in tree.find_all(exp.Anonymous):
        if str(fn.name).lower() in ("columns", "unpack"):
            return None
    names = {str(c.name).lower() for c in tree.find_all(exp.Column)}
    names |= {str(i.this).lower() for i in tree.find_all(exp.Identifier)}
    return names


def _load_relations(db: Database, scratch: Scratch, names: set[str], columns: set[str] | None) -> None:
    from memstore.store.quoting import sql_ident

    for name in sorted(names):
        cols = [r[0] for r in db.rows("sql:columns", sql=f"DESCRIBE SELECT * FROM {sql_ident(name)}")]
        if not cols:
            continue
        pick = cols if columns is None else [c for c in cols if c.lower() in columns] or cols[:1]
        data = db.arrow("sql:load", sql=f"SELECT {', '.join(sql_ident(c) for c in pick)} FROM {sql_ident(name)}")
        scratch.register(name, data)


def _query_error(sql: str, params: Any, exc: BaseException) -> Exception:
    if isinstance(exc, duckdb.PermissionException):
        return ReadOnlyError(f"m.sql() cannot read files, install or load extensions here: {str(exc).splitlines()[0]}",
                             hint="pass allow_files=True (CLI: --allow-files) to read local files on purpose; "
                                  "extensions are never installed or loaded by m.sql()")
    return QueryError("sql", sql, params, exc)
