"""One Polars frame per projection of the store, optionally narrowed to a scope.

Frame names and what they read:

    memories         memories (all statuses: filter on `invalidated_at` / `expiration_date`)
    history          history events
    entities         entities (with a scope: those the scope's memories mention)
    postings         entity_postings, plus the entity's `entity` name and `entity_label`
    keywords         keyword_postings (BM25 terms)
    links            memory_links (related / supersedes)
    messages         messages
    extraction_runs  extraction_runs
    reads            the audit of reads (config audit.reads: memstore/audit/), oldest first
    <view>           any view of sql/views/ (entity_degrees, extraction_outcomes, ...)

Embeddings are dropped by default (a 384-float column makes frames heavy and prints badly);
`embeddings=True` keeps them as a `pl.Array(pl.Float32, dim)` column. `metadata` stays a JSON
string: `pl.col("metadata").str.json_decode()` turns it into a struct.

>>> frame_query("memories", {"user_id": "alice"}, columns=["id", "embedding", "user_id", "created_at"])[0]
'SELECT t.* EXCLUDE ("embedding") FROM "memories" AS t WHERE t."user_id" = $user_id ORDER BY t."created_at", t."id"'
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from memstore.core.errors import (
    IdentityError,
    UnknownFrameError,
)
from memstore.core.identity import IDENTITY_KEYS
from memstore.store.quoting import sql_ident

if TYPE_CHECKING:
    from memstore.store.database import Database

TABLE_FRAMES = {
    "memories": "memories",
    "history": "history",
    "entities": "entities",
    "postings": "entity_postings",
    "keywords": "keyword_postings",
    "links": "memory_links",
    "messages": "messages",
    "extraction_runs": "extraction_runs",
    "reads": "reads",
}


# Row order of each frame (stable, so two stores with the same rows give equal frames).
FRAME_ORDER = {
    "postings": ("memory_id", "entity_id"),
    "keywords": ("memory_id", "term"),
    "links": ("created_at", "src_id", "dst_id", "kind"),
    "reads": ("ts",),
}


def check_scope(scope: dict[str, Any] | None) -> dict[str, str]:
    """Identity equalities to filter on; values must be non-empty strings, trimmed as add()
    trims them on write.

    >>> check_scope({"user_id": " alice ", "agent_id": None})
    {'user_id': 'alice'}
    """
    if scope is not None and not isinstance(scope, dict):
        raise IdentityError(f"scope must be a dict, got {type(scope).__name__}", hint='e.g. {"user_id": "alice"}')
    out: dict[str, str] = {}
    for key, value in (scope or {}).items():
        if key not in IDENTITY_KEYS:
            raise IdentityError(f"unknown scope key {key!r}", hint=f"use {', '.join(IDENTITY_KEYS)}", key=key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise IdentityError(f"{key} must be a non-empty string, got {value!r}", key=key)
        out[key] = value.strip()
    return out


def frame_query(name: str, scope: dict[str, str], *, columns: list[str], embeddings: bool = False,
                source: str | None = None) -> tuple[str, dict[str, str]]:
    """SQL and parameters for frame `name` over a relation with `columns` (scope values are bound)."""
    source = source or TABLE_FRAMES.get(name, name)
    exclude = "" if embeddings or "embedding" not in columns else ' EXCLUDE ("embedding")'
    params = dict(scope)
    if name == "entities" and scope:
        cond = " AND ".join(f"p.{sql_ident(k)} = ${k}" for k in scope)
        where = f" WHERE t.\"id\" IN (SELECT p.\"entity_id\" FROM \"entity_postings\" AS p WHERE {cond})"
    else:
        missing = [k for k in scope if k not in columns]
        if missing:
            raise IdentityError(f"frame {name!r} has no {missing[0]} column to filter on",
                                hint="drop that scope argument, or filter the frame in Polars", key=missing[0])
        where = (" WHERE " + " AND ".join(f"t.{sql_ident(k)} = ${k}" for k in scope)) if scope else ""
    order = [c for c in FRAME_ORDER.get(name, ("created_at", "id")) if c in columns]
    order_sql = (" ORDER BY " + ", ".join(f"t.{sql_ident(c)}" for c in order)) if order else ""
    if name == "postings":
        select = ('SELECT t.*, e."name" AS "entity", e."label" AS "entity_label" '
                  f'FROM {sql_ident(source)} AS t LEFT JOIN "entities" AS e ON e."id" = t."entity_id"')
    else:
        select = f"SELECT t.*{exclude} FROM {sql_ident(source)} AS t"
    return select + where + order_sql, params


def relation_columns(db: Database, relation: str) -> list[str]:
    """Column names of a table or view in the main schema (empty when there is none)."""
    rows = db.rows("relation_columns", {"name": relation}, sql=(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = $name AND schema_name IN ('main', 'temp') "
        "ORDER BY column_index"))
    return [r[0] for r in rows]


def read_frame(db: Database, name: str, scope: dict[str, Any] | None = None, *, embeddings: bool = False) -> pl.DataFrame:
    """The frame `name` (see the module docstring) as Polars."""
    from memstore.store.views import ensure_views, view_files

    scope = check_scope(scope)
    views = view_files()
    if name not in TABLE_FRAMES and name not in views:
        known = ", ".join(list(TABLE_FRAMES) + sorted(views))
        raise UnknownFrameError(f"no frame named {name!r}", hint=f"choose one of {known}", name=name)
    if name in views:
        failed = ensure_views(db)
        if name in failed:
            raise UnknownFrameError(f"view {name!r} could not be created: {failed[name]}", name=name)
    columns = relation_columns(db, TABLE_FRAMES.get(name, name))
    sql, params = frame_query(name, scope, columns=columns, embeddings=embeddings)
    table = db.run(f"frame:{name}", params or None, sql=sql).to_arrow_table()
    return pl.from_arrow(table)  # type: ignore[return-value]
