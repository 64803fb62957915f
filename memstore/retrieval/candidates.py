"""A search's inputs to fusion from small focused statements: the filtered scope (one scan, no
vectors), the postings of the query's terms and entities, and the scope's vectors from the
in-process scope cache (the store only for memories the cache does not hold).

The statements are sql/queries/search_scope.sql, search_hits.sql and (rarely) search_vectors.sql; memstore/retrieval/fusion.py scores what they return.
"""
from __future__ import annotations

import concurrent.futures
import functools
import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memstore.retrieval.fusion import Hits, Scope, conversation_dot, conversation_groups, neighbour_context, neighbour_order
from memstore.store.sqlfiles import load_sql

if TYPE_CHECKING:
    from memstore.store.database import Database


def _sql(name: str, **parts: str) -> str:
    text = load_sql(f"queries/{name}")
    for marker, value in parts.items():
        text = text.replace(f"/*{marker}*/", value)
    return text


def load_scope(db: Database, *, where: str, params: dict[str, Any], qtext: str, qvec: np.ndarray | None,
               use_cache: bool = True, records: bool = False, neighbour_window: int = 0,
               neighbour_gap_us: float = float("inf")) -> tuple[Scope, pa.Table]:
    """The filtered scope's rows (and the Arrow table they came from: with every memory column but
    the embedding when `records`); cosines from the scope cache's unit vectors when it holds them,
    else from the vectors read with the scope; the context of the memories added alone within
    `neighbour_window` places, within pauses of `neighbour_gap_us` (fusion.neighbour_context)."""
    dim = int(db.dim)
    # a store larger than the cache's budget: the scan reads the vectors (one statement, the scope's
    # rows only) rather than loading the scope into the cache first (a second scan of the scope)
    from_cache = qvec is not None and use_cache and db.scope_cache.max_rows > 0 and db.scope_cache.fits_store is not False
    vector_sql = ", m.embedding AS _vector" if qvec is not None and not from_cache else ""
    p = dict(params, qtext=qtext)
    table = db.arrow("search_scope", p, sql=_sql("search_scope", WHERE=where, VECTOR=vector_sql,
                                       RECORD=", m.* EXCLUDE (embedding, id, scope_key)" if records else ""))
    ids = table.column("id").to_pylist()
    keys = table.column("_episode_key").to_pylist()
    group = conversation_groups(table.column("_episode_key"))
    cos = conv = nb = vecs = None
    if qvec is not None:
        if from_cache:
            vecs, found = db.scope_cache.vectors_for(db, table.column("scope_key").to_pylist(), ids)
            if not found.all():          # not cached (e.g. written since by another path): read them
                missing = [ids[i] for i in np.flatnonzero(~found)]
                got = dict(db.rows("search_vectors", {"ids": missing}, sql=load_sql("queries/search_vectors")))
                for i in np.flatnonzero(~found):
                    if got.get(ids[i]) is not None:
                        vecs[i] = unit_rows(np.asarray([got[ids[i]]], np.float32))[0]
        else:
            flat = table.column("_vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            vecs = unit_rows(np.asarray(flat, np.float32).reshape(len(ids), dim))
        q = np.asarray(qvec, np.float32)
        cos = vecs @ (q / max(float(np.linalg.norm(q)), 1e-12))
        conv = conversation_dot(vecs, group)
        if neighbour_window > 0:
            valid_us = table.column("_valid_at_us").to_numpy(zero_copy_only=False)
            order = neighbour_order(group, valid_us, ids)
            nb = neighbour_context(vecs, order, neighbour_window, valid_us[order], neighbour_gap_us)
    col = lambda name: table.column(name).to_numpy(zero_copy_only=False)  # noqa: E731
    scope = Scope(ids=ids, doc_len=col("_doc_len").astype(np.float64),
                  valid_at=np.floor_divide(col("_valid_at_us"), 1_000_000),
                  slot_family=table.column("_slot_family").to_pylist(),
                  person=col("_person").astype(np.float64), cosine=cos, episode_key=keys,
                  time_stated=col("_time_stated").astype(bool), conv_group=group, conv_dot=conv, neighbours=nb,
                  vecs=vecs)
    return scope, table


def unit_rows(vecs: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero), as the scope cache holds them."""
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)


@functools.lru_cache(maxsize=64)
def _hits_sql(posting_scope: str) -> str:
    """The hits statement for a posting scope on alias p (the entity half reads alias e)."""
    return _sql("search_hits", POSTING_SCOPE=posting_scope,
                POSTING_SCOPE_E=re.sub(r"\bp\.", "e.", posting_scope))


def hits_table(db: Database, *, posting_scope: str, scope_params: dict[str, Any], terms: list[str],
               entity_ids: list[str]) -> pa.Table | None:
    """The postings statement of a search: (kind, memory_id, key, tf) of the query's terms (kind 0) and
    entities (kind 1) in the identity scope; None when the query has neither."""
    if not (terms or entity_ids):
        return None
    return db.arrow("search_hits", dict(scope_params, qterms=terms, qent_ids=entity_ids), sql=_hits_sql(posting_scope))


def match_hits(post: pa.Table | None, scope: Scope, terms: list[str], entities: dict[str, float]) -> Hits:
    """hits_table's rows as Hits: matched to scope rows and query keys in Arrow (a Python loop over
    ~2k postings cost ~0.7 ms); postings of memories outside the filtered scope are dropped."""
    ent_ids = list(entities)
    empty = np.zeros(0, np.int64)
    kw_row = kw_term = ent_row = ent_idx = empty
    kw_tf = np.zeros(0, np.float64)
    if post is not None and post.num_rows and scope.n:
        rows = pc.index_in(post.column("memory_id"), value_set=pa.array(scope.ids, pa.string()))
        kind = post.column("kind")
        for k in (0, 1):
            sel = pc.and_(pc.equal(kind, k), pc.is_valid(rows))
            r = _ints(pc.filter(rows, sel))
            keys = pc.index_in(pc.filter(post.column("key"), sel), value_set=pa.array(terms if k == 0 else ent_ids,
                                                                                       pa.string()))
            if k == 0:
                kw_row, kw_term = r, _ints(keys)
                kw_tf = pc.filter(post.column("tf"), sel).to_numpy(zero_copy_only=False).astype(np.float64)
            else:
                ent_row, ent_idx = r, _ints(keys)
    return Hits(terms=list(terms), kw_row=kw_row, kw_term=kw_term, kw_tf=kw_tf,
                ent_match=np.array([entities[e] for e in ent_ids], np.float64),
                ent_row=ent_row, ent_idx=ent_idx, ent_ids=ent_ids)


_POOL: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def read_beside(fn: Callable[[], Any]) -> concurrent.futures.Future:
    """Run a read statement on a helper thread (its own cursor) while the caller runs another: a
    cold search reads its scope and its postings at once (two statements of ~3-4 ms each on a 1M
    store). The pool is made per process (a pool made before a fork has no threads after it).
    Only for autocommitted reads: a statement inside the caller's transaction must run on its cursor.

    >>> read_beside(lambda: 6 * 7).result()
    42
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="memstore-read"))
        return _POOL[1].submit(fn)


def _ints(arr: Any) -> np.ndarray:
    """An Arrow integer column (chunked or not, no nulls) as int64 NumPy."""
    return np.asarray(arr.to_numpy(zero_copy_only=False) if not isinstance(arr, pa.ChunkedArray)
                      else arr.combine_chunks().to_numpy(zero_copy_only=False), np.int64)
