"""A keyword match counts in the fused score in proportion to the semantic match: words shared with
a weakly related fact must not push the fact that means the answer below it (issue 32: most of
the questions plain cosine ranking found and fusion lost were lost to the keyword signal)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from memstore import Memory
from memstore.retrieval.fusion import FusionParams, Hits, Scope, fuse

WEIGHTS = {"semantic": 0.5, "keyword": 0.3, "entity": 0.0, "recency": 0.0, "slot": 0.0, "person": 0.0,
           "episode": 0.0, "time": 0.0}


def _fuse(cosine: list[float] | None, use_semantic: bool = True, w_semantic: float = 0.5):
    """Two memories: 'answer' means the query (no shared word), 'lexical' shares its words."""
    scope = Scope(ids=["answer", "lexical"], doc_len=np.array([4.0, 4.0]), valid_at=np.array([0, 0]),
                  slot_family=[None, None], person=np.zeros(2),
                  cosine=None if cosine is None else np.array(cosine, np.float32))
    hits = Hits(terms=["tournament", "game"], kw_row=np.array([1, 1]), kw_term=np.array([0, 1]),
                kw_tf=np.array([1.0, 1.0]), ent_match=np.zeros(0), ent_row=np.zeros(0, int),
                ent_idx=np.zeros(0, int))
    use = {"semantic": use_semantic, "keyword": True, "entity": True}
    weights = dict(WEIGHTS, semantic=w_semantic)
    return fuse(scope, hits, FusionParams(weights=weights, now=0, use=use)).to_pylist()


def test_a_lexical_match_on_a_weakly_related_fact_does_not_outrank_the_meaning():
    rows = _fuse([0.62, 0.30])
    assert [r["id"] for r in rows] == ["answer", "lexical"]
    lexical = rows[1]
    # without the gate it would score (0.5 x 0.30 + 0.3 x 1.0) / 0.8 = 0.5625 > the answer's 0.3875
    assert lexical["keyword"] == pytest.approx(1.0)
    assert lexical["score"] == pytest.approx((0.5 * 0.30 + 0.3 * 1.0 * 0.30) / 0.8, abs=1e-6)
    assert rows[0]["score"] == pytest.approx(0.5 * 0.62 / 0.8, abs=1e-6)


def test_among_facts_that_mean_the_query_the_keyword_match_still_decides():
    rows = _fuse([0.60, 0.58])
    assert [r["id"] for r in rows] == ["lexical", "answer"]


def test_with_the_semantic_channel_off_or_weightless_keywords_rank_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = _fuse(None, use_semantic=False)
    assert [r["id"] for r in rows] == ["lexical"]
    assert rows[0]["score"] == pytest.approx(0.3 * rows[0]["keyword"] / 0.8, abs=1e-6)
    rows = _fuse([0.62, 0.30], w_semantic=0.0)          # semantic counts for nothing: no gate either
    assert [r["id"] for r in rows] == ["lexical", "answer"]
    assert rows[0]["score"] == pytest.approx(0.3 * rows[0]["keyword"] / 0.3, abs=1e-6)


def test_search_reports_the_keyword_signal_and_scores_it_gated(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "g.duckdb"), config={"embedder": {"provider": "hashing"}})
    try:
        for text in ("Nate won a video game tournament", "Nate adopted a turtle", "Joanna wrote a screenplay"):
            m.add(text, user_id="u", infer=False)
        res = m.search("video game tournament", user_id="u", explain=True)["results"]
        kw = [r for r in res if r["explain"]["keyword"] > 0]
        assert kw and kw[0]["memory"] == "Nate won a video game tournament"
        sc = m.config.search
        for r in res:
            e = r["explain"]
            assert 0 <= e["score"] <= 1
            assert e["score"] * (sc.w_semantic + sc.w_keyword + sc.w_entity + sc.w_recency + sc.w_person
                                 + sc.w_episode) >= sc.w_keyword * e["keyword"] * e["semantic"] - 1e-9
        only_kw = m.search("video game tournament", user_id="u", explain=True, channels=["keyword"])["results"]
        assert only_kw[0]["explain"]["score"] == pytest.approx(only_kw[0]["explain"]["keyword"], abs=1e-9)
    finally:
        m.close()


def test_the_dashboard_splits_a_gated_score_into_its_true_parts(tmp_path):
    import polars as pl

    from memstore.dashboard.data import SIGNALS, contributions, effective_weights

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "d.duckdb"), config={"embedder": {"provider": "hashing"}})
    try:
        for text in ("Nate won a video game tournament", "Nate plays board games", "Joanna wrote a screenplay"):
            m.add(text, user_id="u", infer=False)
        res = m.search("video game tournament", user_id="u", explain=True)["results"]
        frame = pl.DataFrame([{"rank": i + 1, "memory": r["memory"], "score": r["score"],
                               **{s: r["explain"][s] for s in SIGNALS}} for i, r in enumerate(res)])
        sc = m.config.search
        w = effective_weights({"semantic": sc.w_semantic, "keyword": sc.w_keyword, "entity": sc.w_entity,
                               "recency": sc.w_recency, "slot": 0.0, "person": sc.w_person,
                               "episode": sc.w_episode, "time": 0.0}, ["semantic", "keyword", "entity"])
        parts = contributions(frame, w)
        total = sum(w.values())
        for r in res:
            mine = parts.filter(pl.col("result").str.ends_with(r["memory"][:60]))
            assert mine["part"].sum() == pytest.approx(r["score"], abs=1e-9)
            kw = mine.filter(pl.col("signal") == "keyword")["part"][0]
            assert kw == pytest.approx(sc.w_keyword * r["explain"]["keyword"] * r["explain"]["semantic"] / total,
                                       abs=1e-9)
        assert any(r["explain"]["keyword"] > 0 for r in res)
    finally:
        m.close()
