"""search(): recall through meaning, words and entities, fuse, optionally rerank.

The formula is documented in sql/queries/fuse_scores.sql (the reference implementation); search
runs the same formula in NumPy (memstore/retrieval/fusion.py) over small focused statements:
every signal is in [0, 1] and the fused score is a weighted mean with a fixed denominator, so
`threshold` means the same thing for every query: a result needs fused score >= threshold.
"""
from __future__ import annotations

import datetime as dt
import functools
import math
import re
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa

from memstore.core.checks import MAX_LIMIT, check_limit, check_query  # noqa: F401  (search's API)
from memstore.core.config import is_weight
from memstore.core.errors import InvalidInputError
from memstore.core.identity import IDENTITY_KEYS
from memstore.core.records import memory_record
from memstore.core.rules.signals import CHANNELS, effective_weights
from memstore.core.rules.validity import status_expr, visibility_sql
from memstore.core.timeutil import utcnow
from memstore.retrieval.candidates import hits_table, load_scope, match_hits, read_beside
from memstore.retrieval.filters import compile_filters, posting_scope_sql
from memstore.retrieval.fusion import FusionParams, fuse
from memstore.retrieval.query_analysis import analyze_query
from memstore.retrieval.query_time import query_periods
from memstore.retrieval.snapshot import Snapshot, build_snapshot, snapshots_for
from memstore.store.optimize import store_rows, unclustered_rows
from memstore.store.sqlfiles import load_sql

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.database import Database



def query_words(query: str) -> str:
    """The query as lowercase words between single spaces, padded, possessives dropped: what the
    person signal matches `attributed_to` against.

    >>> query_words("What did Caroline's sister, Mary-Ann, say?")
    ' what did caroline sister mary-ann say '
    """
    words = re.findall(r"[\w'’-]+", query.lower())
    return " " + " ".join(re.sub(r"['’]s$", "", w) for w in words) + " "



ENGINES = ("numpy", "sql")
RECORDS_IN_SCAN_ROWS = 20_000


@functools.lru_cache(maxsize=256)
def _identity_filter_sql(keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    sql, params, _scope = compile_filters({k: "x" for k in keys})
    return sql, tuple(params)


def _compile(filters: Any) -> tuple[str, dict[str, Any], dict[str, str]]:
    """compile_filters, with the SQL of the common filters (identity keys with plain text values
    only) generated once per key set: sqlglot costs ~2 ms a search otherwise."""
    if isinstance(filters, dict) and filters and all(
            k in IDENTITY_KEYS and isinstance(v, str) and v and v.strip() == v for k, v in filters.items()):
        sql, names = _identity_filter_sql(tuple(filters))
        if len(names) == len(filters):
            return sql, dict(zip(names, filters.values())), dict(filters)
    return compile_filters(filters)


@functools.lru_cache(maxsize=256)
def _posting_scope_shape(keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    sql, params = posting_scope_sql({k: "x" for k in keys})
    return sql, tuple(params)


def _posting_scope(scope: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """posting_scope_sql, generated once per key set."""
    keys = tuple(k for k in IDENTITY_KEYS if k in scope)
    sql, names = _posting_scope_shape(keys)
    return sql, dict(zip(names, (scope[k] for k in keys)))


def _bound(sql: str, params: dict[str, Any]) -> dict[str, Any]:
    """Only the parameters the statement names (DuckDB rejects unused ones)."""
    return {k: v for k, v in params.items() if re.search(rf"\${re.escape(k)}\b", sql)}


def candidate_table(rt: Runtime, query: str, *, filters: dict[str, Any], limit: int,
                    include_superseded: bool = False, show_expired: bool = False, as_of: dt.datetime | None = None,
                    channels: Sequence[str] = CHANNELS, weights: dict[str, float] | None = None,
                    timings: dict[str, float] | None = None, engine: str = "numpy") -> pa.Table:
    """Every candidate with its per-signal scores, channels and fused score (Arrow table).

    engine "numpy" (default): the scope and the query's postings from small statements, vectors from
    the scope cache, fusion in memstore/retrieval/fusion.py. engine "sql": the reference statement
    sql/queries/fuse_scores.sql. Both return the same columns and values (tests/test_search_golden.py).
    """
    return _candidates(rt, query, filters=filters, limit=limit, include_superseded=include_superseded,
                       show_expired=show_expired, as_of=as_of, channels=channels, weights=weights,
                       timings=timings, engine=engine)[0]


def _candidates(rt: Runtime, query: str, *, filters: dict[str, Any], limit: int, include_superseded: bool,
                show_expired: bool, as_of: dt.datetime | None, channels: Sequence[str],
                weights: dict[str, float] | None, timings: dict[str, float] | None, engine: str = "numpy",
                records: bool = False) -> tuple[pa.Table, pa.Table | dict[str, dict[str, Any]] | None]:
    """(fused candidates, the scope's rows with their memory columns when `records`: a table, or
    from a search snapshot a dict id -> columns)."""
    limit, channels = _check_call(query, limit, channels, engine)
    db, sc = rt.db, rt.config.search
    timings = timings if timings is not None else {}
    where, params, scope = _compile(filters)
    posting_scope, scope_params = _posting_scope(scope)
    vis = visibility_sql(include_superseded=include_superseded, show_expired=show_expired, as_of=as_of is not None)
    now = utcnow()
    params["now"] = now
    if as_of is not None:
        params["as_of"] = as_of
    w = _weights(sc, weights, channels, query)
    t0 = time.perf_counter()
    vec = rt.embed_query(query) if "semantic" in channels else [[0.0] * db.dim]
    qvec = np.asarray(vec, np.float32).reshape(-1)[:db.dim]
    t1 = time.perf_counter()
    q = analyze_query(rt.nlp, query)
    t2 = time.perf_counter()
    timings.update(embed=t1 - t0, analyze=t2 - t1)
    scope_where = f"({where}) AND {vis}"
    snap = None
    if engine == "numpy" and not (include_superseded or show_expired or as_of is not None):
        snap = _snapshot(db, where, params, posting_scope, scope_params, int(sc.neighbour_window),
                         float(sc.episode_minutes) * 60e6, scope_identity(scope))
    if snap is not None:        # a hot scope: no statement at all
        table, recs = snapshot_candidates(snap, query, qvec, q, sc, _fusion_params(sc, w, now, channels, limit),
                                          now, records=records)
        timings.update(sql=0.0, fusion=time.perf_counter() - t2)
        return table, recs
    # result rows: from the scope scan itself (one statement less) on a small store or a store
    # clustered by scope; by id after fusion on a large one in append order, where every scope
    # row's columns would be read from many row groups (measured at 100k: -1.2 ms clustered,
    # +1.2 ms in append order)
    records_in_scan = records and (store_rows(db) <= RECORDS_IN_SCAN_ROWS
                                   or unclustered_rows(db) <= RECORDS_IN_SCAN_ROWS)
    read_hits = functools.partial(hits_table, db, posting_scope=posting_scope, scope_params=scope_params,
                                  terms=q.terms, entity_ids=list(q.entity_ids))
    # the postings are read beside the scope (two cores: the slower statement's time, not the sum)
    pending = read_beside(read_hits) if (q.terms or q.entity_ids) and not db.in_transaction else None
    scope_rows, scope_table = load_scope(db, where=scope_where, params=_bound(scope_where, params),
                                         qtext=query_words(query),
                                         qvec=qvec if "semantic" in channels else None, records=records_in_scan,
                                         neighbour_window=int(sc.neighbour_window),
                                         neighbour_gap_us=float(sc.episode_minutes) * 60e6)
    all_hits = match_hits(pending.result() if pending is not None else read_hits(), scope_rows, q.terms,
                          q.entity_ids)
    # one term per query word (the scope's own form), counting the postings of all the word's forms
    terms, ents, families = q.resolve_forms(all_hits.df())     # entities as id -> strength
    hits = all_hits.restrict(terms, ents, families)
    t3 = time.perf_counter()
    if engine == "sql":
        params.update(scope_params)
        params.update(candidate_k=int(sc.candidate_k), k1=sc.k1, b=sc.b, hub_damping=sc.hub_damping,
                      w_sem=w["semantic"], w_kw=w["keyword"], w_ent=w["entity"], w_rec=w["recency"],
                      w_slot=w["slot"], qslot=w["_qslot"], w_ep=w["episode"], w_time=w["time"],
                      qtime_start=[a for a, _ in w["_periods"].spans], qtime_end=[b for _, b in w["_periods"].spans],
                      qtime_months=list(w["_periods"].months), time_half_life_days=float(sc.time_half_life_days),
                      episode_minutes=float(sc.episode_minutes), w_person=w["person"], qtext=query_words(query),
                      conv_lambda=float(sc.conversation_smoothing), nb_window=int(sc.neighbour_window),
                      fb_k=int(sc.feedback_k), fb_beta=float(sc.feedback_beta),
                      fb_coherence=float(sc.feedback_coherence),
                      half_life_days=sc.half_life_days, use_sem="semantic" in channels,
                      use_kw="keyword" in channels, use_ent="entity" in channels, limit=int(limit),
                      qvec=qvec, qterms=terms, qforms=list(families), qform_terms=list(families.values()), qent_ids=list(ents), qent_match=[float(v) for v in ents.values()])
        sql = load_sql("queries/fuse_scores").replace("/*WHERE*/", f"({where}) AND {vis}") \
            .replace("/*POSTING_SCOPE*/", posting_scope).replace("{dim}", str(int(db.dim)))
        table = db.arrow("fuse_scores", params, sql=sql)
        timings.update(sql=time.perf_counter() - t3)
        return table, None
    table = fuse(scope_rows, hits, _fusion_params(sc, w, now, channels, limit))
    t4 = time.perf_counter()
    timings.update(sql=t3 - t2, fusion=t4 - t3)
    if records and not records_in_scan:
        ids = table.column("id").to_pylist()
        scope_table = db.arrow("search_records", dict(scope_params, ids=ids),
                               sql=load_sql("queries/search_records").replace(
                                   "/*POSTING_SCOPE*/", re.sub(r"\bp\.", "m.", posting_scope))) if ids else None
    return table, (scope_table if records else None)


def _check_call(query: str, limit: Any, channels: Sequence[str] | str, engine: str = "numpy"
                ) -> tuple[int, tuple[str, ...]]:
    """The checked (limit, channels) of a search call; InvalidInputError for a bad query, limit,
    engine or channel."""
    check_query(query)
    limit = check_limit(limit, "top_k")
    if engine not in ENGINES:
        raise InvalidInputError(f"unknown search engine {engine!r}", hint=f"use one of {', '.join(ENGINES)}")
    if isinstance(channels, str):
        channels = (channels,)
    bad = [c for c in channels if c not in CHANNELS]
    if bad or not channels:
        raise InvalidInputError(f"unknown search channel(s) {bad}", hint=f"use any of {', '.join(CHANNELS)}")
    return limit, tuple(channels)


def _fusion_params(sc: Any, w: dict[str, Any], now: dt.datetime, channels: Sequence[str], limit: int) -> FusionParams:
    return FusionParams(weights={k: v for k, v in w.items() if not k.startswith("_")},
                        now=(now - dt.datetime(1970, 1, 1)).total_seconds(), qslot=w["_qslot"],
                        candidate_k=int(sc.candidate_k), k1=sc.k1, b=sc.b, hub_damping=sc.hub_damping,
                        half_life_days=sc.half_life_days, episode_minutes=float(sc.episode_minutes),
                        use={ch: ch in channels for ch in CHANNELS}, limit=int(limit),
                        periods=w["_periods"], time_half_life_days=float(sc.time_half_life_days),
                        conversation_smoothing=float(sc.conversation_smoothing),
                        feedback_k=int(sc.feedback_k), feedback_beta=float(sc.feedback_beta),
                        feedback_coherence=float(sc.feedback_coherence))


def snapshot_candidates(snap: Snapshot, query: str, qvec: np.ndarray, q: Any, sc: Any, fp: FusionParams,
                        now: dt.datetime, *, records: bool = False
                        ) -> tuple[pa.Table, dict[str, dict[str, Any]] | None]:
    """(fused candidates, id -> memory columns when `records`) of a search on a snapshot: NumPy
    only, no store. The one fusion path of every snapshot search, in the owner and in a server's
    front process (memstore/server/front_search.py)."""
    now_us = (now - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    scope_rows, _table, row_map = snap.scope(query_words(query), qvec if fp.use["semantic"] else None, now_us,
                                             int(sc.neighbour_window), float(sc.episode_minutes) * 60e6)
    all_hits = snap.hits(q.terms, q.entity_ids, row_map)
    terms, ents, families = q.resolve_forms(all_hits.df())     # as _candidates: one term per query word
    table = fuse(scope_rows, all_hits.restrict(terms, ents, families), fp)
    return table, (snap.records() if records else None)


def snapshot_search(snap: Snapshot, nlp: Any, sc: Any, query: str, qvec: Any, *, top_k: int,
                    threshold: float | None, explain: bool = False, channels: Sequence[str] = CHANNELS,
                    weights: dict[str, float] | None = None, timings: dict[str, float] | None = None
                    ) -> dict[str, Any]:
    """What run_search returns for this search when it reads `snap` (a search with no as_of,
    show_expired, include_superseded or rerank, whose filter the snapshot was built for), without a
    store: `nlp` the spaCy pipeline, `sc` the search config, `qvec` the query's vector.

    >>> # snapshot_search(snap, rt.nlp, rt.config.search, "where is ana", vec, top_k=5, threshold=None)
    """
    _check_threshold(threshold)
    limit, channels = _check_call(query, top_k, channels)
    timings = timings if timings is not None else {}
    w = _weights(sc, weights, channels, query)
    now = utcnow()
    t1 = time.perf_counter()
    q = analyze_query(nlp, query)
    t2 = time.perf_counter()
    qv = np.asarray(qvec, np.float32).reshape(-1)[:snap.vecs.shape[1]] if "semantic" in channels \
        else np.zeros(snap.vecs.shape[1], np.float32)
    table, recs = snapshot_candidates(snap, query, qv, q, sc, _fusion_params(sc, w, now, channels, limit), now,
                                      records=True)
    timings.update(analyze=t2 - t1, sql=0.0, fusion=time.perf_counter() - t2)
    out: dict[str, Any] = {"results": _results(table, recs, threshold, explain)}
    if explain:
        out["timings"] = timings
    return out


def snapshot_key(where: str, params: dict[str, Any], posting_scope: str) -> Any:
    """The key of a compiled filter's snapshot (None when its searches never use one: a filter on
    the current time, or with list values)."""
    if "$now" in where or "$as_of" in where:
        return None
    key = (where, posting_scope, tuple(sorted((k, v) for k, v in params.items() if k not in ("now", "as_of"))))
    try:
        hash(key)
    except TypeError:           # a filter with list values: read the store
        return None
    return key


def filter_key_identity(filters: Any) -> tuple[Any, tuple[tuple[str, str], ...]]:
    """(snapshot_key, scope_identity) of search filters as given (the compiled filter;
    InvalidInputError when bad)."""
    where, params, scope = _compile(filters)
    return snapshot_key(where, params, _posting_scope(scope)[0]), scope_identity(scope)


def scope_identity(scope: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The (key, value) identity pairs a compiled filter's scope requires, in IDENTITY_KEYS order
    (what ScopeCache.unchanged_since matches changed scopes against).

    >>> scope_identity({"run_id": "r1", "user_id": "ana"})
    (('user_id', 'ana'), ('run_id', 'r1'))
    """
    return tuple((k, scope[k]) for k in IDENTITY_KEYS if isinstance(scope.get(k), str))


def _snapshot(db: Database, where: str, params: dict[str, Any], posting_scope: str,
              scope_params: dict[str, Any], neighbour_window: int = 0,
              neighbour_gap_us: float = float("inf"), identity: tuple[tuple[str, str], ...] = ()) -> Snapshot | None:
    """The filter's search snapshot when valid (built on its second search while nothing in its
    scope changed), else None: memstore/retrieval/snapshot.py. `identity`: scope_identity of the
    filter (writes to other scopes leave its snapshot valid)."""
    key = snapshot_key(where, params, posting_scope)
    if db.scope_cache.max_rows <= 0 or key is None:
        return None
    store = snapshots_for(db.scope_cache)
    cache = db.scope_cache
    gen = cache.current_generation(db)

    def still_valid(since: int) -> bool:
        return cache.unchanged_since(db, since, identity)

    snap = store.lookup(key, gen, still_valid)
    if snap is None and store.want(key, gen, still_valid):
        snap_where = f"({where}) AND (m.invalidated_at IS NULL)"
        snap = build_snapshot(db, where=snap_where, params=_bound(snap_where, params), posting_scope=posting_scope,
                              posting_scope_e=re.sub(r"\bp\.", "e.", posting_scope), scope_params=scope_params,
                              generation=gen, neighbour_window=neighbour_window,
                              neighbour_gap_us=neighbour_gap_us)
        if snap is not None:
            snap.identity = identity
            store.put(key, snap)
    return snap


def _weights(sc: Any, weights: dict[str, float] | None, channels: Sequence[str], query: str) -> dict[str, Any]:
    """The fusion weights of this query: config, per-call overrides, channel, slot and time switches
    ("_qslot" carries the attribute the query asks about, or None; "_periods" the periods it names)."""
    from memstore.core.rules.slots import question_slot

    qslot = question_slot(query)
    periods = query_periods(query)
    w = {"semantic": sc.w_semantic, "keyword": sc.w_keyword, "entity": sc.w_entity, "recency": sc.w_recency,
         "slot": sc.w_slot, "person": sc.w_person, "episode": sc.w_episode, "time": sc.w_time}
    if weights:
        unknown = set(weights) - set(w)
        if unknown:
            raise InvalidInputError(f"unknown weight(s) {sorted(unknown)}", hint=f"use {', '.join(w)}")
        for name, value in weights.items():
            if not is_weight(value):
                raise InvalidInputError(f"search weight {name!r} must be a finite number >= 0, got {value!r}",
                                        hint="weights are relative: 0 turns a signal off, larger counts more")
        w.update({k: float(v) for k, v in weights.items()})
    # a channel that is off contributes neither candidates nor score; with fewer than all three,
    # each ranks by its own signal (core/rules/signals.py)
    w = effective_weights(w, channels)
    if set(channels) == set(CHANNELS):
        if qslot is None:
            w["slot"] = 0.0
        if not periods:      # like slot: the weight depends on the query only, never on the candidates
            w["time"] = 0.0
    if sum(w.values()) <= 0:
        raise InvalidInputError("search weights sum to zero")
    return dict(w, _qslot=qslot, _periods=periods)


def run_search(rt: Runtime, query: str, *, filters: dict[str, Any], top_k: int, threshold: float | None,
               explain: bool, include_superseded: bool, show_expired: bool, as_of: dt.datetime | None,
               rerank: bool, channels: Sequence[str] = CHANNELS,
               weights: dict[str, float] | None = None) -> dict[str, Any]:
    _check_threshold(threshold)
    timings: dict[str, float] = {}
    table, scope_table = _candidates(rt, query, filters=filters, limit=top_k, include_superseded=include_superseded,
                                     show_expired=show_expired, as_of=as_of, channels=channels, weights=weights,
                                     timings=timings, records=True)
    results = _results(table, scope_table, threshold, explain)
    if rerank:
        results = _rerank(rt, query, results)
    out: dict[str, Any] = {"results": results}
    if explain:
        out["timings"] = timings
    return out


def _check_threshold(threshold: Any) -> None:
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating))
                                  or not math.isfinite(threshold)):
        raise InvalidInputError(f"threshold must be a number, got {threshold!r}",
                                hint="scores are in [0, 1]: e.g. threshold=0.3, or None for no cut")


def _results(table: pa.Table, scope_table: pa.Table | dict[str, dict[str, Any]] | None, threshold: float | None,
             explain: bool) -> list[dict[str, Any]]:
    """The result records of fused candidates (above `threshold`), with their memory columns."""
    cands = table.to_pylist()
    if threshold is not None:
        cands = [c for c in cands if c["score"] >= threshold]
    rows: dict[str, dict[str, Any]] = {}
    if cands and isinstance(scope_table, dict):      # a snapshot's records by id
        rows = {c["id"]: scope_table[c["id"]] for c in cands if c["id"] in scope_table}
    elif cands and scope_table is not None:
        row_of = {mid: i for i, mid in enumerate(scope_table.column("id").to_pylist())}
        picked = scope_table.take([row_of[c["id"]] for c in cands if c["id"] in row_of])
        rows = {r["id"]: r for r in picked.drop_columns([c for c in picked.column_names if c.startswith("_")])
                .to_pylist()}
    results = []
    for c in cands:
        if c["id"] not in rows:  # deleted by another thread between scoring and reading: not a result
            continue
        rec = memory_record(rows[c["id"]], c["score"])
        if explain:
            rec["explain"] = {"semantic": c["semantic"], "keyword": c["keyword"], "bm25": c["bm25"],
                              "entity": c["entity"], "recency": c["recency"], "slot": c["slot"],
                              "person": c["person"], "episode": c["episode"], "time": c["time"],
                              "score": c["score"],
                              "channels": [ch for ch in CHANNELS if c[f"by_{ch}"]], "status": rec["status"]}
            # the same under mem0's names (mem0/utils/scoring.py), so mem0 code reading them ports
            rec["score_details"] = {"semantic_score": c["semantic"], "bm25_score": c["keyword"],
                                    "entity_boost": c["entity"], "final_score": c["score"], "threshold": threshold}
        results.append(rec)
    return results


def _rerank(rt: Runtime, query: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Apply rt.reranker(query, results) -> scores; on any failure keep the fused order and warn."""
    reranker = getattr(rt, "reranker", None)
    if reranker is None or not results:
        if reranker is None:
            warnings.warn("rerank=True but no reranker is configured: keeping the fused order",
                          RuntimeWarning, stacklevel=3)
        return results
    try:
        scores = list(reranker(query, results))
        if len(scores) != len(results):
            raise ValueError(f"reranker returned {len(scores)} scores for {len(results)} results")
        for r, s in zip(results, scores):
            r["rerank_score"] = float(s)
        return sorted(results, key=lambda r: -r["rerank_score"])
    except Exception as exc:
        warnings.warn(f"reranker failed ({type(exc).__name__}: {exc}); keeping the fused order",
                      RuntimeWarning, stacklevel=3)
        return results


def explain_frame(rt: Runtime, query: str, *, filters: dict[str, Any], limit: int = 1000, **kwargs: Any) -> pl.DataFrame:
    """The whole candidate table (every channel's candidates, every signal) joined with the text."""
    table = candidate_table(rt, query, filters=filters, limit=limit, **kwargs)
    frame = pl.from_arrow(table)
    if frame.height == 0:
        return frame.with_columns(pl.lit(None, pl.Utf8).alias("memory"), pl.lit(None, pl.Utf8).alias("status"))
    texts = rt.db.frame("queries/get_memories_by_ids", {"ids": frame["id"].to_list()})
    status = status_expr(utcnow())
    texts = texts.select("id", "memory", status.alias("status"))
    return frame.join(texts, on="id", how="left").with_row_index("rank", offset=1)
