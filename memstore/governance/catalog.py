"""What the store's tables look like, from DuckDB's catalog: which name a scope, a memory or an
entity, and which hold text. Erasure, verification and doctor read tables through this, so a table
another feature adds later is covered without a list to keep in step.

>>> quote_ident('we"ird')
'"we""ird"'
>>> identity_condition({"user_id": "a"}, ["user_id", "agent_id"])
'"user_id" = $user_id'
>>> identity_condition({"agent_id": "x"}, ["user_id"]) is None
True
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memstore.core.identity import IDENTITY_KEYS
from memstore.store.quoting import sql_ident, sql_string  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from memstore.store.database import Database

MEMORY_REF_COLUMNS = ("memory_id", "src_id", "dst_id")
# Bookkeeping tables: no personal content by design (the byte scan checks them like the rest).
BOOKKEEPING_TABLES = frozenset({("main", "store_meta"), ("main", "schema_migrations"),
                                ("main", "erasure_receipts"), ("main", "exports"),
                                ("main", "pending_erasures")})


quote_ident = sql_ident      # one quoting helper for the package: memstore.store.quoting


def relation(schema: str, table: str) -> str:
    """Quoted `schema.table`."""
    return f"{quote_ident(schema)}.{quote_ident(table)}"


def table_label(schema: str, table: str) -> str:
    """How reports name a table: bare in `main`, qualified elsewhere."""
    return table if schema == "main" else f"{schema}.{table}"


def table_columns(db: Database) -> dict[tuple[str, str], dict[str, str]]:
    """(schema, table) → {column: type} for every base table."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for schema, table, column, dtype in db.rows("queries/governance_columns"):
        out.setdefault((schema, table), {})[column] = dtype
    return out


def text_columns(columns: dict[str, str]) -> list[str]:
    """Columns holding text (VARCHAR, JSON, VARCHAR[])."""
    return [c for c, t in columns.items() if t.startswith("VARCHAR") or t == "JSON"]


def is_attributable(table: str, columns: Sequence[str] | dict[str, str]) -> bool:
    """Can a row of this table be tied to a scope (so text left in it after an erasure belongs to
    someone else)? Identity columns, scope_key, a memory reference, or the shared entities table."""
    return (table == "entities" or any(k in columns for k in IDENTITY_KEYS) or "scope_key" in columns
            or any(c in columns for c in MEMORY_REF_COLUMNS))


def identity_condition(scope: dict[str, str], columns: Sequence[str] | dict[str, str], alias: str = "") -> str | None:
    """`"user_id" = $user_id AND ...` over the scope's keys; None when the table lacks one of them."""
    prefix = f"{alias}." if alias else ""
    if not all(k in columns for k in scope):
        return None
    return " AND ".join(f"{prefix}{quote_ident(k)} = ${k}" for k in sorted(scope))


def scope_row_counts(db: Database, scope: dict[str, str]) -> dict[str, int]:
    """Rows matching the scope's identity in every table that has the identity columns."""
    out = {}
    for (schema, table), cols in table_columns(db).items():
        cond = identity_condition(scope, cols)
        if cond is None or (schema, table) in BOOKKEEPING_TABLES:
            continue
        out[table_label(schema, table)] = int(db.scalar(f"SELECT count(*) FROM {relation(schema, table)} WHERE {cond}",
                                                        dict(scope)))
    return out
