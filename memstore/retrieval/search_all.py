"""Analyst search across every scope on DuckDB's VSS HNSW index (never used by the agent-facing
`search`, which always runs inside one scope). The index is persisted with the store and rebuilt
when it is missing or unusable."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from memstore.core.checks import check_limit, check_query
from memstore.core.errors import MemstoreError
from memstore.core.records import memory_record
from memstore.core.rules.validity import visibility_sql
from memstore.core.timeutil import utcnow
from memstore.retrieval.filters import check_filters, compile_filters
from memstore.store.database import registered
from memstore.store.optimize import INDEX_NAME, ensure_hnsw  # noqa: F401  (search_all's API)
from memstore.store.sqlfiles import load_sql
from memstore.store.write_values import vectors_table

if TYPE_CHECKING:
    from memstore.runtime import Runtime

log = logging.getLogger("memstore.search_all")


def vector_literal(vec: np.ndarray, dim: int) -> str:
    """A FLOAT[dim] SQL literal built from our own floats (no user text reaches it).

    >>> vector_literal(np.array([0.5, -1.0]), 2)
    '[0.5,-1.0]::FLOAT[2]'
    """
    vals = np.asarray(vec, dtype=np.float32).reshape(-1)
    if vals.shape[0] != dim or not np.all(np.isfinite(vals)):
        raise MemstoreError(f"query vector must be {dim} finite floats")
    return "[" + ",".join(repr(float(v)) for v in vals) + f"]::FLOAT[{int(dim)}]"



def run_search_all(rt: Runtime, query: str, *, top_k: int = 10, where: dict[str, Any] | None = None,
                   exact: bool = False, include_superseded: bool = False, show_expired: bool = False,
                   overfetch: int = 10) -> dict[str, Any]:
    check_query(query)
    top_k = check_limit(top_k, "top_k")
    db = rt.db
    cond, params, _ = compile_filters(check_filters(where, "where"), require_scope=False)
    vis = visibility_sql(include_superseded=include_superseded, show_expired=show_expired)

    params.update(now=utcnow(), limit=int(top_k))
    vec = rt.embed_query(query)
    if exact:
        sql = load_sql("queries/search_all_exact").replace("/*WHERE*/", f"({cond}) AND {vis}")
        with registered(db, "qvec", vectors_table(vec, db.dim)):
            rows = db.dicts("search_all_exact", _used(params, sql), sql=sql)
    else:
        ensure_hnsw(db)
        sql = load_sql("queries/search_all_hnsw").replace("/*QVEC*/", vector_literal(vec[0], db.dim)) \
            .replace("/*FETCH*/", str(int(top_k) * int(overfetch)))
        scores = {i: 1.0 - d for i, d in db.rows("search_all_hnsw", sql=sql)}
        params["ids"] = list(scores)
        params.pop("limit")
        sql = load_sql("queries/search_all_rows").replace("/*WHERE*/", f"({cond}) AND {vis}")
        rows = db.dicts("search_all_rows", _used(params, sql), sql=sql) if scores else []
        for r in rows:
            r["score"] = scores[r["id"]]
        rows = sorted(rows, key=lambda r: -r["score"])[: int(top_k)]
    return {"results": [memory_record(r, r["score"]) for r in rows]}


def _used(params: dict[str, Any], sql: str) -> dict[str, Any]:
    """The parameters `sql` names: $now only where the visibility rule reads the clock (show_expired
    with include_superseded reads nothing of it, and DuckDB refuses a parameter it does not use).

    >>> _used({"now": 1, "limit": 2}, "LIMIT $limit")
    {'limit': 2}
    """
    return {k: v for k, v in params.items() if f"${k}" in sql}
