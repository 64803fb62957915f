"""Documented views: one file per view in `sql/views/`, the view named by the file stem.

A view file holds one query (SELECT or WITH …), led by comments that document its columns; the
loader runs `CREATE OR REPLACE VIEW "<stem>" AS <query>`. A file written as a full
`CREATE [OR REPLACE] VIEW x AS …` is accepted too (the view is still named by the stem).

`ensure_views(db)` creates them lazily, once per open store: persistent views in a writable store
(so the DuckDB CLI sees them too), TEMP views on the calling thread's cursor of a read-only one.
A view may select from another view: creation is retried until no more succeed, and the views that
still fail are returned with their error instead of breaking every other read.

>>> "entity_degrees" in view_files()
True
>>> view_statement("entity_degrees").startswith('CREATE OR REPLACE VIEW "entity_degrees" AS')
True
"""
from __future__ import annotations

import re
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from memstore.core.errors import QueryError
from memstore.store.sqlfiles import load_sql, sql_root

if TYPE_CHECKING:
    from memstore.store.database import Database

_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
_CREATE_HEAD = re.compile(r"\ACREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?VIEW\s+"
                          r"(?:IF\s+NOT\s+EXISTS\s+)?(?:\"[^\"]+\"|[\w.]+)\s+AS\s+", re.I)

_created: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def view_files() -> dict[str, Path]:
    """{view name: file} for every `sql/views/*.sql`."""
    root = sql_root() / "views"
    return {p.stem: p for p in sorted(root.glob("*.sql"))} if root.is_dir() else {}


def view_query(name: str) -> str:
    """The query of view `name` (see `query_of`)."""
    return query_of(load_sql(f"views/{name}"))


def query_of(text: str) -> str:
    r"""A view file's query: without a `CREATE … VIEW x AS` head or trailing semicolons.

    >>> query_of("-- doc\nSELECT 1 AS x;\n")
    '-- doc\nSELECT 1 AS x'
    >>> query_of("-- doc\ncreate or replace view other_name as\nSELECT 2;")
    'SELECT 2'
    """
    head = _LEADING_COMMENTS.match(text)
    start = head.end() if head else 0
    m = _CREATE_HEAD.match(text[start:])
    body = text[start + m.end():] if m else text
    body = body.rstrip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body


def view_statement(name: str, *, temp: bool = False) -> str:
    """The CREATE statement for view `name`."""
    kind = "TEMP VIEW" if temp else "VIEW"
    ident = exp.to_identifier(name, quoted=True).sql(dialect="duckdb")
    return f"CREATE OR REPLACE {kind} {ident} AS\n{view_query(name)}\n"


def ensure_views(db: Database) -> dict[str, str]:
    """Create every view of `sql/views/` that this store (or, read-only, this cursor) lacks.
    Returns {view: error} for views that could not be created (empty when all are there)."""
    if db.read_only:
        existing = {r[0] for r in db.rows("list_views", sql="SELECT view_name FROM duckdb_views() WHERE NOT internal")}
        wanted = [n for n in view_files() if n not in existing]
        return _create(db, wanted, temp=True) if wanted else {}
    with _lock:
        if db in _created:
            return _created[db]
    with db.write_lock:
        failed = _create(db, list(view_files()), temp=False)
    with _lock:
        _created[db] = failed
    return failed


def _create(db: Database, names: list[str], *, temp: bool) -> dict[str, str]:
    pending, errors = list(names), dict[str, str]()
    while pending:
        errors = {}
        for name in pending:
            try:
                db.run(f"views/{name}", sql=view_statement(name, temp=temp))
            except (QueryError, FileNotFoundError) as exc:
                errors[name] = str(exc)
        if len(errors) == len(pending):    # no progress: the rest fail for their own reasons
            break
        pending = list(errors)
    return errors
