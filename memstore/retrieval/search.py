"""search(): embed the query, scan the scope, rank. (Hybrid fusion: see fuse_scores.sql.)"""
from __future__ import annotations

import datetime as dt
from typing import Any

from memstore.records import memory_record
from memstore.retrieval.filters import compile_filters
from memstore.retrieval.visibility import visibility_sql
from memstore.store.database import registered, vectors_table
from memstore.store.sqlfiles import load_sql


def run_search(rt: Any, query: str, *, filters: dict[str, Any], top_k: int, threshold: float | None,
               explain: bool, include_superseded: bool, show_expired: bool, as_of: dt.datetime | None,
               rerank: bool) -> dict[str, Any]:
    db = rt.db
    where, params, _ = compile_filters(filters)
    vis = visibility_sql(include_superseded=include_superseded, show_expired=show_expired, as_of=as_of is not None)
    params.update(now=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), limit=int(top_k))
    if as_of is not None:
        params["as_of"] = as_of
    vec = rt.embedder.embed([query])
    sql = load_sql("queries/search_semantic").replace("/*WHERE*/", f"({where}) AND {vis}")
    with registered(db, "qvec", vectors_table(vec, db.dim)):
        rows = db.dicts("search_semantic", params, sql=sql)
    results = [memory_record(r, r["score"]) for r in rows if threshold is None or r["score"] >= threshold]
    return {"results": results}
