"""Fusion in NumPy: the formula of sql/queries/fuse_scores.sql over a scope's candidates in memory.

The SQL file stays the reference (its header documents every signal); this module computes the same
columns from the same inputs. tests/test_search_golden.py runs both on the same stores and compares
every signal, so the two cannot drift. Scoring a few hundred candidates here takes well under a
millisecond; the one fused SQL statement spent most of its ~45 ms planning a chain of CTEs.

>>> import numpy as np
>>> s = Scope(ids=["a", "b"], doc_len=np.array([3.0, 5.0]), valid_at=np.array([0, 7200]),
...           slot_family=[None, "lives_in"], person=np.array([0.0, 1.0]), cosine=np.array([0.9, 0.2]))
>>> hits = Hits(terms=["boston"], kw_row=np.array([1]), kw_term=np.array([0]), kw_tf=np.array([1.0]),
...             ent_match=np.array([]), ent_row=np.array([], int), ent_idx=np.array([], int))
>>> p = FusionParams(weights={"semantic": 0.5, "keyword": 0.3, "entity": 0.0, "recency": 0.0, "slot": 0.15,
...                  "person": 0.0, "episode": 0.0}, now=7200, qslot="lives_in")
>>> t = fuse(s, hits, p)          # b's keyword match counts times its semantic match 0.2
>>> t.column("id").to_pylist(), [round(x, 3) for x in t.column("score").to_pylist()]
(['a', 'b'], [0.474, 0.32])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memstore.retrieval.query_time import QueryPeriods, time_scores

SIGNAL_WEIGHTS = ("semantic", "keyword", "entity", "recency", "slot", "person", "episode", "time")

SCHEMA = pa.schema([("id", pa.string()), ("by_semantic", pa.bool_()), ("by_keyword", pa.bool_()),
                    ("by_entity", pa.bool_()), ("semantic", pa.float32()), ("keyword", pa.float64()),
                    ("bm25", pa.float64()), ("entity", pa.float64()), ("n_entities", pa.int64()),
                    ("recency", pa.float64()), ("slot", pa.float64()), ("person", pa.float64()),
                    ("episode", pa.float64()), ("time", pa.float64()), ("score", pa.float64())])


@dataclass
class Neighbours:
    """The memories alone in their add() call (facts added one by one), in the order they were said,
    with the query-independent parts of their context vector c (the mean unit vector of the
    `window` memories said just before and after them among those, and their own, never across a
    pause of more than episode_minutes): v . c and |c|^2."""

    rows: np.ndarray                    # scope rows, in the order said (valid_at, then id)
    dot: np.ndarray                     # v . c per row of `rows`
    sq: np.ndarray                      # |c|^2 per row of `rows`
    lo: np.ndarray                      # the window of rows[p] is rows[lo[p]:hi[p]]
    hi: np.ndarray
    key: tuple = ()                     # (window, max gap): what it was built for
    _norms: dict[float, np.ndarray] = field(default_factory=dict, repr=False)
    _places: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.inv_cnt = 1.0 / (self.hi - self.lo)

    def places(self, n: int) -> np.ndarray:
        """Each of n scope rows' place in the order said (index into `rows`), -1 for a memory that
        is not alone in its add() call.

        >>> nb = Neighbours(rows=np.array([2, 0]), dot=np.ones(2), sq=np.ones(2), lo=np.zeros(2, int),
        ...                 hi=np.full(2, 2))
        >>> nb.places(3).tolist()
        [1, -1, 0]
        """
        got = self._places.get(n)
        if got is None:
            got = self._places[n] = np.full(n, -1, np.int64)
            got[self.rows] = np.arange(len(self.rows))
        return got

    def inv_norm(self, lam: float) -> np.ndarray:
        """1 / |v + lam c| per row (query-independent, kept per lam)."""
        got = self._norms.get(lam)
        if got is None:
            got = self._norms[lam] = 1.0 / np.sqrt(np.maximum(1 + 2 * lam * self.dot + lam * lam * self.sq, 1e-12))
        return got

    def smooth(self, cos: np.ndarray, lam: float) -> np.ndarray:
        """(q.v + lam q.c) / |v + lam c| for `rows`, q.c the window's mean cosine."""
        x = cos[self.rows].astype(np.float64)
        cs = np.zeros(len(x) + 1)
        np.cumsum(x, out=cs[1:])
        return ((x + lam * (cs[self.hi] - cs[self.lo]) * self.inv_cnt) * self.inv_norm(lam)).astype(np.float32)


@dataclass
class Scope:
    """The filtered scope's memories, one row each (parallel arrays)."""

    ids: list[str]
    doc_len: np.ndarray                 # keyword terms per memory
    valid_at: np.ndarray                # epoch seconds of coalesce(valid_from, created_at)
    slot_family: list[str | None]
    person: np.ndarray                  # 1.0 when the query names attributed_to
    cosine: np.ndarray | None = None    # None when the semantic channel is off
    episode_key: list[str | None] | None = None   # the add() call that stored it (extraction_run_id)
    conv_group: np.ndarray | None = None          # conversation_groups(episode_key)
    time_stated: np.ndarray | None = None         # True when its time was given (valid_from != created_at)
    conv_dot: np.ndarray | None = None            # unit vector . its conversation's mean unit vector
    neighbours: Neighbours | None = None          # the context of the memories added alone
    vecs: np.ndarray | None = None                # unit vectors (n, dim), for the feedback pass

    @property
    def n(self) -> int:
        return len(self.ids)


@dataclass
class Hits:
    """Postings of the query's terms and entities inside the scope, as row indexes into Scope."""

    terms: list[str]                    # the query's distinct keyword terms
    kw_row: np.ndarray
    kw_term: np.ndarray                 # index into terms
    kw_tf: np.ndarray
    ent_match: np.ndarray               # match strength per query entity
    ent_row: np.ndarray
    ent_idx: np.ndarray                 # index into ent_match
    ent_ids: list[str] = field(default_factory=list)

    def df(self) -> dict[str, int]:
        """Postings per term in the scope."""
        return dict(zip(self.terms, np.bincount(self.kw_term, minlength=len(self.terms)).tolist()))

    def restrict(self, terms: list[str], entities: dict[str, float],
                 families: dict[str, str] | None = None) -> Hits:
        """The hits of these terms and entity ids only (strength from `entities`), reindexed.
        `families`: form -> term; a form's postings count as its term's, one posting per memory
        and term (tf summed)."""
        t_new = {t: i for i, t in enumerate(terms)}
        merged = np.zeros(len(terms) + 1, bool)       # terms that other forms' postings count for
        if not families or len(families) <= len(terms):  # each term its own postings only
            src = [t_new.get(t, -1) for t in self.terms]
        else:
            src = []
            for t in self.terms:
                f = families.get(t, t)
                i = t_new.get(f, -1)
                src.append(i)
                if f != t:
                    merged[i] = True
        t_map = np.array(src + [-1], np.int64)[self.kw_term] if len(self.kw_term) else np.zeros(0, np.int64)
        kw = t_map >= 0
        kw_row, kw_term, kw_tf = self.kw_row[kw], t_map[kw], self.kw_tf[kw]
        sub = merged[kw_term]                    # only postings of merged terms can repeat a memory
        if sub.sum() > 1:
            key = kw_row[sub] * len(terms) + kw_term[sub]
            uniq, inv = np.unique(key, return_inverse=True)
            if len(uniq) < len(key):
                keep = ~sub
                kw_tf = np.concatenate([kw_tf[keep].astype(np.float64),
                                        np.bincount(inv, weights=kw_tf[sub].astype(np.float64))])
                kw_row = np.concatenate([kw_row[keep], uniq // len(terms)])
                kw_term = np.concatenate([kw_term[keep], uniq % len(terms)])
        e_ids = list(entities)
        e_new = {e: i for i, e in enumerate(e_ids)}
        e_map = np.array([e_new.get(e, -1) for e in self.ent_ids] + [-1], np.int64)[self.ent_idx] \
            if len(self.ent_idx) else np.zeros(0, np.int64)
        ent = e_map >= 0
        return Hits(terms=list(terms), kw_row=kw_row, kw_term=kw_term, kw_tf=kw_tf,
                    ent_match=np.array([entities[e] for e in e_ids], np.float64), ent_row=self.ent_row[ent],
                    ent_idx=e_map[ent], ent_ids=e_ids)


@dataclass
class FusionParams:
    weights: dict[str, float]
    now: float                          # epoch seconds
    qslot: str | None = None
    candidate_k: int = 100
    k1: float = 1.2
    b: float = 0.75
    hub_damping: float = 0.0
    half_life_days: float = 30.0
    episode_minutes: float = 60.0
    periods: QueryPeriods = field(default_factory=QueryPeriods)   # what the query names (time signal)
    time_half_life_days: float = 7.0
    conversation_smoothing: float = 1.0  # lambda: the memory's vector + lambda x its conversation's mean
    use: dict[str, bool] = field(default_factory=lambda: {"semantic": True, "keyword": True, "entity": True})
    limit: int = 20
    feedback_k: int = 0                 # pseudo-relevance feedback from the first pass's best k (0: off)
    feedback_beta: float = 0.5
    feedback_coherence: float = 0.7     # ... only when their mean pairwise cosine is at least this


def _top(values: np.ndarray, mask: np.ndarray, k: int, ids: np.ndarray) -> np.ndarray:
    """Row indexes of the k largest values among rows where mask holds (ties by id, as the SQL)."""
    rows = np.flatnonzero(mask)
    return rows if len(rows) <= k else rows[_order(values[rows], ids[rows], k)]     # a set: no sort when all stay


def _order(values: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the k largest values, largest first, ties by id (as the SQL's ORDER BY value DESC, id),
    sorting the object ids of those k (and any tied at the cut) only.

    >>> _order(np.array([0.2, 0.9, 0.5, 0.9]), np.array(["a", "d", "c", "b"], dtype=object), 3).tolist()
    [3, 1, 2]
    """
    idx = np.arange(len(values))
    if len(idx) > k > 0:
        idx = idx[values >= np.partition(values, len(values) - k)[len(values) - k]]
    return idx[np.lexsort((ids[idx], -values[idx]))][:k]


def keyword_scores(scope: Scope, hits: Hits, p: FusionParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bm25, keyword, has_hit) per scope row; statistics over the filtered scope. keyword is the
    share of the query terms' idf a memory matches: each term's BM25 part counts up to its idf (a
    match at average length), so a short memory, or one that repeats a word, cannot stand in for
    the query words it lacks; bm25 (the keyword channel's ranking) keeps the whole parts.

    >>> s = Scope(ids=list("abcd"), doc_len=np.array([2.0, 4.0, 4.0, 6.0]), valid_at=np.zeros(4, np.int64),
    ...           slot_family=[None] * 4, person=np.zeros(4))
    >>> h = Hits(terms=["cello", "alice"], kw_row=np.array([0, 1, 1, 2, 3]), kw_term=np.array([0, 0, 1, 1, 1]),
    ...          kw_tf=np.array([2.0, 1.0, 1.0, 1.0, 1.0]), ent_match=np.zeros(0), ent_row=np.zeros(0, int),
    ...          ent_idx=np.zeros(0, int))
    >>> bm25, kw, _ = keyword_scores(s, h, FusionParams(weights={}, now=0))
    >>> bm25.round(2).tolist(), kw.round(2).tolist()   # a says "cello" twice; b says cello and alice
    ([1.11, 1.05, 0.36, 0.3], [0.66, 1.0, 0.34, 0.28])
    """
    n = scope.n
    avgdl = max(float(scope.doc_len.mean()) if n else 1.0, 1.0)
    df = np.bincount(hits.kw_term, minlength=len(hits.terms)).astype(np.float64)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    tf = hits.kw_tf.astype(np.float64)
    dl = scope.doc_len[hits.kw_row]
    part = idf[hits.kw_term] * tf * (p.k1 + 1) / (tf + p.k1 * (1 - p.b + p.b * dl / avgdl))
    bm25 = np.bincount(hits.kw_row, weights=part, minlength=n)
    has = np.bincount(hits.kw_row, minlength=n) > 0
    matched = np.bincount(hits.kw_row, weights=np.minimum(part, idf[hits.kw_term]), minlength=n)
    keyword = np.minimum(1.0, matched / max(float(idf.sum()), 1e-9))
    return bm25, keyword, has


def entity_scores(scope: Scope, hits: Hits, p: FusionParams) -> tuple[np.ndarray, np.ndarray]:
    """(entity, n_entities) per scope row: noisy-or of match x idf-like weight (hub damping)."""
    n = scope.n
    if len(hits.ent_row) == 0:
        return np.zeros(n), np.zeros(n, np.int64)
    deg = np.bincount(hits.ent_idx, minlength=len(hits.ent_match)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.log(1 + (n - deg + 0.5) / (deg + 0.5)) / math.log(1 + (max(n, 1) - 0.5) / 1.5) \
            / (1 + p.hub_damping * np.power(deg - 1, 2))
    strength = np.minimum(1.0, hits.ent_match[hits.ent_idx] * weight[hits.ent_idx])
    logs = np.log(np.maximum(1e-12, 1 - strength))
    entity = 1 - np.exp(np.bincount(hits.ent_row, weights=logs, minlength=n))
    count = np.bincount(hits.ent_row, minlength=n).astype(np.int64)
    return np.where(count > 0, entity, 0.0), count


def conversation_groups(keys: Any) -> np.ndarray:
    """Group index per row from the rows' add() call keys (a list or an Arrow array): rows stored by
    the same add() call share one; a row without a key is a group of its own.

    >>> conversation_groups(["r1", None, "r1", "r2"]).tolist()
    [0, 2, 0, 1]
    """
    arr = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(keys, pa.string())
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    idx = enc.indices.to_numpy(zero_copy_only=False)
    if enc.null_count:
        nulls = np.flatnonzero(enc.is_null().to_numpy(zero_copy_only=False))
        idx = np.asarray(idx, np.float64)
        idx[nulls] = len(enc.dictionary) + np.arange(len(nulls))
    return np.asarray(idx, np.int64)


def conversation_dot(vecs: np.ndarray, group: np.ndarray) -> np.ndarray:
    """v_i . c_g per row: its unit vector times the mean unit vector of its conversation (group,
    from conversation_groups); 1.0 for a memory alone in its own. Query-independent: a snapshot
    computes it once.

    >>> v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
    >>> conversation_dot(v, conversation_groups(["r1", "r1", None])).round(3).tolist()
    [0.5, 0.5, 1.0]
    """
    out = np.ones(len(vecs))
    if len(vecs) == 0:
        return out
    counts = np.bincount(group)
    multi = counts[group] > 1                          # memories sharing their add() call
    if not multi.any():                                # every memory alone (facts added one by one)
        return out
    if multi.all() and (group[1:] >= group[:-1]).all():   # the usual order: each add() call's rows together
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        means = np.add.reduceat(vecs, starts, axis=0) / counts[group[starts]][:, None].astype(np.float32)
        return np.einsum("ij,ij->i", vecs, means[np.cumsum(np.r_[False, group[1:] != group[:-1]])]).astype(np.float64)
    rows = np.flatnonzero(multi)
    sub = group[rows]
    order = np.argsort(sub, kind="stable")
    sorted_rows, sorted_sub = rows[order], sub[order]
    starts = np.flatnonzero(np.r_[True, sorted_sub[1:] != sorted_sub[:-1]])
    sums = np.add.reduceat(vecs[sorted_rows], starts, axis=0)
    means = sums / counts[sorted_sub[starts]][:, None].astype(np.float32)
    which = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(sorted_rows)]))
    out[sorted_rows] = np.einsum("ij,ij->i", vecs[sorted_rows], means[which])
    return out


def neighbour_order(group: np.ndarray, valid_us: np.ndarray, ids: list[str]) -> np.ndarray:
    """The rows alone in their add() call (group of one), in the order said: valid_at (microseconds)
    then id, as fuse_scores.sql's ORDER BY valid_at, id.

    >>> neighbour_order(np.array([0, 1, 2, 1]), np.array([30, 10, 20, 10]), ["c", "b", "a", "d"]).tolist()
    [2, 0]
    """
    counts = np.bincount(group) if len(group) else np.zeros(0, np.int64)
    rows = np.flatnonzero(counts[group] == 1)
    t = np.asarray(valid_us, np.int64)[rows]
    order = rows[np.argsort(t, kind="stable")]
    ts = np.asarray(valid_us, np.int64)[order]
    if len(ts) > 1 and (ts[1:] == ts[:-1]).any():        # a shared time: by id, as the SQL
        order = np.array(sorted(order.tolist(), key=lambda i: (int(valid_us[i]), ids[i])), np.int64)
    return order


def neighbour_windows(times: np.ndarray, window: int, max_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per position of memories in the order said (`times`, microseconds): up to `window`
    places on each side, cut at a pause longer than `max_gap` microseconds.

    >>> lo, hi = neighbour_windows(np.array([0, 10, 20, 10_000, 10_010]), 2, 100)
    >>> lo.tolist(), hi.tolist()
    ([0, 0, 0, 3, 3], [3, 3, 3, 5, 5])
    """
    m = len(times)
    pos = np.arange(m)
    run = np.concatenate([[0], np.cumsum(np.diff(np.asarray(times, np.int64)) > max_gap)])
    starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    ends = np.r_[starts[1:], m]
    return np.maximum(pos - window, starts[run]), np.minimum(pos + window + 1, ends[run])


def neighbour_context(vecs: np.ndarray, rows: np.ndarray, window: int, times: np.ndarray | None = None,
                      max_gap: float = math.inf) -> Neighbours | None:
    """v . c and |c|^2 for the memories added alone (`rows`, in the order said, at `times` in
    microseconds), c the mean of the unit vectors within `window` places of each (itself included;
    fewer at either end and at a pause longer than `max_gap`). None when off (window 0) or fewer
    than two such memories. Query-independent: a snapshot computes it once.

    >>> v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
    >>> nb = neighbour_context(v, np.array([0, 1, 2]), 1)
    >>> nb.dot.round(3).tolist(), nb.sq.round(3).tolist()       # c = (1, 0)/2 + (0, 1)/2 ... at the ends
    ([0.5, 0.333, 0.5], [0.5, 0.556, 0.5])
    """
    m = len(rows)
    if window <= 0 or m < 2:
        return None
    v = np.ascontiguousarray(vecs[rows], np.float32)
    w = int(window)
    lo, hi = neighbour_windows(np.zeros(m, np.int64) if times is None else times, w, max_gap)
    cnt = (hi - lo).astype(np.float64)
    # v_a . v_(a+e) in float32 (the vectors' own precision; error ~1e-7): float64 copies cost ~0.5 ms
    # of a cold 1,000-memory search
    near = [np.einsum("ij,ij->i", v[:m - e], v[e:]).astype(np.float64) for e in range(min(2 * w, m - 1) + 1)]
    dot, sq = np.zeros(m), np.zeros(m)
    pos = np.arange(m)
    for r1 in range(-w, w + 1):
        a = pos + r1
        ok_a = (a >= lo) & (a < hi)
        if not ok_a.any():              # (then no pair at this distance exists: near may lack it)
            continue
        val = np.zeros(m)
        val[ok_a] = near[abs(r1)][np.minimum(a, pos)[ok_a]]
        dot += val
        for r2 in range(-w, w + 1):
            b = pos + r2
            ok = ok_a & (b >= lo) & (b < hi)
            if ok.any():
                val = np.zeros(m)
                val[ok] = near[abs(r1 - r2)][np.minimum(a, b)[ok]]
                sq += val
    return Neighbours(rows=np.asarray(rows, np.int64), dot=dot / cnt, sq=sq / (cnt * cnt), lo=lo, hi=hi,
                      key=(w, max_gap))


def smooth_cosine(cos: np.ndarray, group: np.ndarray, conv_dot: np.ndarray, lam: float,
                  neighbours: Neighbours | None = None) -> np.ndarray:
    """Cosine of the query with the memory's unit vector v plus lam times its conversation's mean
    unit vector c (document expansion from the conversation the memory was told in: what a fact
    leaves implicit its conversation says), from per-row quantities only:
    (q.v + lam q.c) / |v + lam c|, where q.c is the conversation's mean cosine and
    |v + lam c|^2 = 1 + 2 lam v.c + lam^2 |c|^2, |c|^2 the conversation's mean v.c. A memory alone
    in its conversation keeps its cosine.

    A memory added alone is read the same way with the memories said just before and after it
    (`neighbours`, when given): facts stored one by one keep the context a session would give them.

    >>> g = conversation_groups(["r1", "r1", None])
    >>> out = smooth_cosine(np.array([0.9, 0.1, 0.5]), g, np.array([0.5, 0.5, 1.0]), 1.0)
    >>> [round(float(x), 3) for x in out]      # (0.9 + 0.5) / sqrt(1 + 1 + 0.5); alone: unchanged
    [0.885, 0.379, 0.5]
    >>> v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
    >>> g = conversation_groups(["r1", "r2", "r3"])
    >>> nb = neighbour_context(v, np.arange(3), 1)
    >>> [round(float(x), 3) for x in smooth_cosine(np.array([0.9, 0.1, 0.9]), g, np.ones(3), 1.0, nb)]
    [0.885, 0.492, 0.885]
    """
    if lam <= 0 or len(cos) == 0:
        return cos
    if neighbours is not None and len(neighbours.rows) == len(cos):    # every memory added alone
        out = np.empty(len(cos), np.float32)
        out[neighbours.rows] = neighbours.smooth(cos, lam)
        return out
    counts = np.maximum(np.bincount(group), 1).astype(np.float64)   # 0 only for ids no row has (expired rows)
    qc = np.bincount(group, weights=cos.astype(np.float64)) / counts
    cc = np.bincount(group, weights=conv_dot) / counts
    norm = np.sqrt(np.maximum(1 + 2 * lam * conv_dot + lam * lam * cc[group], 1e-12))
    out = ((cos + lam * qc[group]) / norm).astype(np.float32)
    alone = counts[group] == 1
    out[alone] = cos[alone]                            # exactly, not up to rounding
    if neighbours is not None:
        out[neighbours.rows] = neighbours.smooth(cos, lam)
    return out


def episode_scores(scope: Scope, rows: np.ndarray, valid_at: np.ndarray, best: int,
                   episode_minutes: float) -> np.ndarray:
    """1.0 for the candidates of the anchor's conversation (the anchor is rows[best]): the memories
    stored by the same add() call (extraction_run_id: the messages the caller handed over together),
    and those whose stated time (a timestamp given to add(), or the messages') lies within
    episode_minutes of the anchor's. A memory stored without a stated time has only its storage
    time, which says nothing about when it was said (sessions imported one after the other are
    seconds apart): it groups by its add() call alone. A memory added alone (facts stored one by
    one) has the conversation its smoothing reads (`scope.neighbours`): when the anchor is one, the
    memories added alone within the neighbour window of it, in the order said, come along.

    >>> s = Scope(ids=list("abcd"), doc_len=np.ones(4), valid_at=np.array([0, 10, 20, 30]),
    ...           slot_family=[None] * 4, person=np.zeros(4), episode_key=["r1", "r1", "r2", "r3"],
    ...           time_stated=np.array([False, False, False, True]))
    >>> episode_scores(s, np.arange(4), s.valid_at, 0, 60.0).tolist()   # b: same call; c, d: others
    [1.0, 1.0, 0.0, 0.0]
    >>> s.time_stated[:] = True                                         # all said within the hour
    >>> episode_scores(s, np.arange(4), s.valid_at, 0, 60.0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    >>> s.time_stated[:] = False; s.episode_key = ["r1", "r2", "r3", "r4"]     # all added alone
    >>> s.neighbours = neighbour_context(np.eye(4, dtype=np.float32), np.arange(4), 1)
    >>> episode_scores(s, np.arange(4), s.valid_at, 0, 60.0).tolist()   # b: said next to a
    [1.0, 1.0, 0.0, 0.0]
    """
    near = np.abs(valid_at - valid_at[best]) <= episode_minutes * 60
    if scope.time_stated is not None:
        stated = scope.time_stated[rows]
        near &= stated & stated[best]
    if scope.episode_key is not None:
        anchor = scope.episode_key[rows[best]]
        if anchor is not None and scope.conv_group is not None:    # conv_group: one per add() call key
            near |= scope.conv_group[rows] == scope.conv_group[rows[best]]
        elif anchor is not None:
            near |= np.array([scope.episode_key[i] == anchor for i in rows], bool)
    nb = scope.neighbours
    if nb is not None:
        places = nb.places(scope.n)
        at = places[rows[best]]
        if at >= 0:                     # the anchor was added alone: its neighbour window
            near |= (places[rows] >= nb.lo[at]) & (places[rows] < nb.hi[at])
    return near.astype(np.float64)


def feedback_cosine(cos: np.ndarray, vecs: np.ndarray, top: np.ndarray, beta: float,
                    min_coherence: float) -> np.ndarray | None:
    """Rocchio feedback: the cosine of every row with q + beta * m, m the mean unit vector of the
    rows `top` (the first pass's best), from the raw cosines `cos` = V q (q a unit vector):
    (q.v + beta m.v) / |q + beta m|, |q + beta m|^2 = 1 + 2 beta q.m + beta^2 |m|^2. None when
    fewer than two rows or their mean pairwise cosine is below min_coherence: the best results
    must agree on one topic, else the feedback drifts toward whichever part of the query the best
    one matched.

    >>> v = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0]], np.float32)
    >>> cos = v @ np.array([0.8, 0.6], np.float32)
    >>> [round(float(x), 3) for x in feedback_cosine(cos, v, np.array([0, 1]), 1.0, 0.7)]   # b passes a
    [0.923, 0.994, 0.384]
    >>> feedback_cosine(cos, v, np.array([0, 2]), 1.0, 0.7) is None      # top rows disagree
    True
    """
    k = len(top)
    if k < 2 or beta <= 0:
        return None
    t = vecs[top].astype(np.float64)
    pair = t @ t.T
    if (pair.sum() - np.trace(pair)) / (k * (k - 1)) < min_coherence:
        return None
    m = t.mean(axis=0)
    norm = math.sqrt(max(1 + 2 * beta * float(cos[top].astype(np.float64).mean()) + beta * beta * float(m @ m), 1e-12))
    # einsum, not BLAS: a row's product must not depend on where the row lies in the scope (BLAS
    # kernels sum a row's tail differently by position: a re-cluster moved scores in the 8th digit)
    mv = np.einsum("ij,j->i", vecs, m.astype(np.float32)).astype(np.float64)
    return ((cos.astype(np.float64) + beta * mv) / norm).astype(np.float32)


def fuse(scope: Scope, hits: Hits, p: FusionParams) -> pa.Table:
    """Candidates from the three channels (top candidate_k each), every signal, fused score; the
    columns, order and values of fuse_scores.sql. With feedback (p.feedback_k > 0, scope.vecs
    given), a second pass with the semantic signal read from the query moved toward the first
    pass's best results (feedback_cosine) when those agree."""
    n, use, k = scope.n, p.use, int(p.candidate_k)
    if n == 0:
        return SCHEMA.empty_table()
    raw = scope.cosine if use["semantic"] and scope.cosine is not None else None
    cos = raw
    smooth = scope.conv_dot is not None and scope.conv_group is not None
    if cos is not None and smooth:
        cos = smooth_cosine(cos, scope.conv_group, scope.conv_dot, p.conversation_smoothing, scope.neighbours)
    bm25, keyword, has_kw = keyword_scores(scope, hits, p)
    entity, n_ent = entity_scores(scope, hits, p)
    all_ids = np.array(scope.ids, dtype=object)
    by = {"keyword": np.zeros(n, bool), "entity": np.zeros(n, bool)}
    if use["keyword"]:
        by["keyword"][_top(bm25, has_kw, k, all_ids)] = True
    if use["entity"]:
        by["entity"][_top(entity, (n_ent > 0) & (entity > 0), k, all_ids)] = True
    fixed = (by, bm25, keyword, entity, n_ent, all_ids)
    ranked = _rank(scope, p, cos, fixed)
    fb_k = int(p.feedback_k)
    if ranked is not None and fb_k > 0 and raw is not None and scope.vecs is not None:
        rows, order = ranked[0], ranked[1]
        cos2 = feedback_cosine(raw, scope.vecs, rows[order[:fb_k]], float(p.feedback_beta),
                               float(p.feedback_coherence))
        if cos2 is not None:
            if smooth:
                cos2 = smooth_cosine(cos2, scope.conv_group, scope.conv_dot, p.conversation_smoothing,
                                     scope.neighbours)
            ranked = _rank(scope, p, cos2, fixed)
    if ranked is None:
        return SCHEMA.empty_table()
    rows, order, cols = ranked
    order = order[:int(p.limit)]
    out = {name: (v[order] if isinstance(v, np.ndarray) else [v[i] for i in order]) for name, v in cols.items()}
    out["id"] = out["id"].tolist()
    return pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)


def _rank(scope: Scope, p: FusionParams, cos: np.ndarray | None, fixed: tuple
          ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]] | None:
    """One pass of fusion with this semantic signal: (candidate scope rows, the best limit (or
    feedback_k) of them in order, by fused score then id, every column per candidate row), None when
    there is no candidate."""
    by_kw_ent, bm25, keyword, entity, n_ent, all_ids = fixed
    n, w, k = scope.n, p.weights, int(p.candidate_k)
    by = dict(by_kw_ent, semantic=np.zeros(n, bool))
    if cos is not None:
        by["semantic"][_top(cos, np.ones(n, bool), k, all_ids)] = True
    rows = np.flatnonzero(by["semantic"] | by["keyword"] | by["entity"])
    if len(rows) == 0:
        return None
    semantic = np.maximum(cos[rows], 0).astype(np.float32) if cos is not None else np.zeros(len(rows), np.float32)
    valid_at = scope.valid_at[rows].astype(np.int64)
    age = np.maximum(math.floor(p.now) - valid_at, 0)
    recency = np.exp(-math.log(2) * age / 86400.0 / p.half_life_days)
    slot = np.array([1.0 if scope.slot_family[i] == p.qslot else 0.0 for i in rows]) \
        if p.qslot is not None else np.zeros(len(rows))
    person = scope.person[rows].astype(np.float64)
    time = time_scores(valid_at, p.periods, p.time_half_life_days)
    # a keyword match counts in proportion to the semantic match (when semantic counts at all: channel
    # on, weight > 0): words shared with a weakly related fact must not push the answer down
    gate = semantic.astype(np.float64) if cos is not None and w["semantic"] > 0 else 1.0
    base = (w["semantic"] * semantic.astype(np.float64) + w["keyword"] * keyword[rows] * gate
            + w["entity"] * entity[rows] + w["recency"] * recency + w["slot"] * slot + w["person"] * person + w.get("time", 0.0) * time)
    id_arr = all_ids[rows]
    best = _order(base, id_arr, 1)[0]              # the anchor: best before the episode signal, then id
    episode = episode_scores(scope, rows, valid_at, best, p.episode_minutes)
    score = (base + w["episode"] * episode) / sum(w.get(s, 0.0) for s in SIGNAL_WEIGHTS)
    order = _order(score, id_arr, max(int(p.limit), int(p.feedback_k)))
    cols = {"id": id_arr, "by_semantic": by["semantic"][rows], "by_keyword": by["keyword"][rows],
            "by_entity": by["entity"][rows], "semantic": semantic, "keyword": keyword[rows], "bm25": bm25[rows],
            "entity": entity[rows], "n_entities": n_ent[rows], "recency": recency, "slot": slot, "person": person,
            "episode": episode, "time": time, "score": score}
    return rows, order, cols
