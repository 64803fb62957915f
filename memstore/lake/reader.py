"""`connect(lake)`: the whole fleet for an analyst, as if it were one store.

A read-only DuckDB connection with the lake attached (read-only) and, in its own in-memory
catalog, one view per published table under the store's name (`memories`, `history`,
`entities`, …, each with a `shard` column) and the store's documented views (`timeline`,
`contradictions`, `scope_summary`, … from sql/views/) over them. `frame(con, sql)` gives Polars.

>>> # con = connect("postgres:dbname=lake host=db1")
>>> # con.sql("SELECT shard, count(*) FROM memories GROUP BY ALL").pl()
"""
from __future__ import annotations

import duckdb
import polars as pl
import sqlglot
from sqlglot import exp

from memstore.governance.catalog import quote_ident
from memstore.lake import tables as T
from memstore.lake.session import LAKE, LakeSession
from memstore.store.sqlfiles import load_sql
from memstore.store.views import view_files, view_query, view_statement

HIDDEN = ("_key", "_hash")


class Lake:
    """What `connect` returns: `.con` (DuckDB), `.sql(q)` (a relation), `.frame(q)` (Polars),
    `.tables`, `.views`, `.view_errors`, `.close()`."""

    def __init__(self, session: LakeSession, tables: list[str], views: list[str], view_errors: dict[str, str]) -> None:
        self._session, self.tables, self.views, self.view_errors = session, tables, views, view_errors
        self.con: duckdb.DuckDBPyConnection = session.con

    def sql(self, query: str, params: object = None) -> duckdb.DuckDBPyConnection:
        return self._session.run("analyst", params, sql=query)

    def frame(self, query: str, params: object = None) -> pl.DataFrame:
        """A Polars frame of `query`."""
        return pl.from_arrow(self._session.arrow("analyst", params, sql=query))  # type: ignore[return-value]

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_shard(name: str) -> str | None:
    """The store's view `name` over a lake, told apart by shard (None when it reads no scope: the
    plain view is used).

    - a view that reads one table row by row (no GROUP BY) gets that table's `shard` as first column;
    - a view that groups by scope gets `shard` beside `scope_key` wherever it appears: in every
      grouping and its output, in every join on scope_key (`a.scope_key = b.scope_key` also
      matches `a.shard = b.shard`), and as the first column of the result. A user moved between
      shards then has one row on each, as each shard's own view would give.

    >>> "m.shard" in with_shard("timeline")
    True
    >>> sql = with_shard("scope_summary")
    >>> "GROUP BY scope_key, shard" in sql and "msg.shard = mem.shard" in sql
    True
    >>> "p.shard" in with_shard("entity_degrees")
    True
    """
    tree = sqlglot.parse_one(view_query(name), read="duckdb")
    if not isinstance(tree, exp.Select):
        return None
    if tree.args.get("group") is None and not tree.args.get("joins") and tree.find(exp.With) is None:
        source = tree.args.get("from") or tree.args.get("from_")
        table = source.this if source is not None else None
        if not isinstance(table, exp.Table):
            return None
        tree.set("expressions", [exp.column("shard", table=table.alias_or_name), *tree.expressions])
    elif not _shard_beside_scope(tree):
        return None
    return f"CREATE OR REPLACE TEMP VIEW {quote_ident(name)} AS\n{tree.sql(dialect='duckdb')}\n"


def _twin(node: exp.Expression) -> exp.Expression:
    """A copy of `node` with every scope_key column read as shard (same table)."""
    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.name == "scope_key":
            return exp.column("shard", table=n.table or None)
        return n
    return node.copy().transform(swap)


def _reads_scope(node: exp.Expression) -> bool:
    return any(c.name == "scope_key" for c in node.find_all(exp.Column))


def _shard_beside_scope(tree: exp.Select) -> bool:
    """Add `shard` wherever a select groups, joins or outputs by scope_key (with_shard); True when
    the outermost select got a shard column."""
    for sel in list(tree.find_all(exp.Select)):
        group = sel.args.get("group")
        if group is not None:
            keys = [g for g in group.expressions if isinstance(g, exp.Column) and g.name == "scope_key"]
            for g in keys:
                group.append("expressions", _twin(g))
        for join in sel.args.get("joins") or []:
            on = join.args.get("on")
            if on is None:
                continue
            eqs = [e for e in on.find_all(exp.EQ) if _reads_scope(e.left) and _reads_scope(e.right)]
            if eqs:
                join.set("on", exp.and_(on, *(_twin(e) for e in eqs)))
        outs = [e for e in sel.expressions if e.alias_or_name == "scope_key" and _reads_scope(e)]
        if outs and not any(e.alias_or_name == "shard" for e in sel.expressions):
            twin = _twin(outs[0])
            twin = exp.alias_(twin.this if isinstance(twin, exp.Alias) else twin, "shard")
            sel.set("expressions", [twin, *sel.expressions])
    return any(e.alias_or_name == "shard" for e in tree.expressions)


def connect(lake: str) -> Lake:
    """Open `lake` read-only with the store's table and view names (see module doc)."""
    s = LakeSession(lake, read_only=True)
    try:
        present = {r[0] for r in s.rows("tables", sql="SELECT table_name FROM duckdb_tables() "
                                                      f"WHERE database_name = '{LAKE}'")}
        tables = [t for t in (*T.KEYS, T.PUBLISHES) if t in present]
        for t in tables:
            name = "publishes" if t == T.PUBLISHES else t
            s.run(f"view:{t}", sql=f"CREATE OR REPLACE TEMP VIEW {quote_ident(name)} AS SELECT * EXCLUDE "
                                   f"({', '.join(HIDDEN)}) FROM {LAKE}.{quote_ident(t)}" if t != T.PUBLISHES else
                  f"CREATE OR REPLACE TEMP VIEW {quote_ident(name)} AS SELECT * FROM {LAKE}.{quote_ident(t)}")
        if "messages" not in present:         # messages are published on request only
            s.run("view:no_messages", sql=load_sql("lake/no_messages"))
        pending, errors, made = list(view_files()), {}, []
        while pending:                                   # a view may read another view: retry until stable
            errors = {}
            for v in pending:
                try:
                    try:
                        s.run(f"view:{v}", sql=with_shard(v) or view_statement(v, temp=True))
                    except Exception:
                        s.run(f"view:{v}", sql=view_statement(v, temp=True))
                    made.append(v)
                except Exception as exc:
                    errors[v] = str(exc).splitlines()[0][:300]
            if len(errors) == len(pending):
                break
            pending = list(errors)
        return Lake(s, tables, made, errors)
    except BaseException:
        s.close()
        raise
