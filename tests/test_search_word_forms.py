"""A query word matches every form of its word family in the keyword index (issue 32): the index
keeps spaCy's lemmas, so "promote" (verb) and "promotions" (noun "promotion"), or "writings"
(noun "writing") and "writing projects" (verb "write"), were different terms and the fact that
shares the question's word in another form lost to facts that share it in the same form. The
forms are found at query time (no change to the postings: stores written before work as they are),
and a word keeps one term: its forms' postings count for it, one posting per memory."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from memstore import Memory
from memstore.providers.nlp import shared_nlp
from memstore.retrieval.fusion import Hits
from memstore.retrieval.query_analysis import analyze_query, derived_forms
from memstore.retrieval.search import candidate_table


@pytest.mark.parametrize("lemma, forms", [
    ("promotion", ["promot", "promote"]),
    ("rejection", ["reject", "rejecte"]),
    ("education", ["educe", "educate"]),
    ("writing", ["writ", "write"]),
    ("gaming", ["gam", "game"]),
    ("swimming", ["swim", "swime"]),
    ("paint", ["paintion", "paintation", "painting", "painter", "paintize"]),
    ("shop", ["shopion", "shopation", "shopping", "shoper", "shopize"]),
    ("symbol", ["symbolion", "symbolation", "symbolling", "symboler", "symbolize"]),
    ("memory", ["memoryion", "memoryation", "memorying", "memoryer", "memorize"]),
    ("emphasis", ["emphasision", "emphasisation", "emphasissing", "emphasiser", "emphasize"]),
])
def test_a_lemma_s_word_family(lemma, forms):
    assert derived_forms(lemma) == forms


@pytest.mark.parametrize("word", ["moment", "mother", "news", "ring", "sum", "a1b", "station", "nation"])
def test_words_that_only_look_derived_get_no_stripped_stem(word):
    assert not any(f in ("mom", "moth", "new", "r", "su", "state", "nate") for f in derived_forms(word))


def test_names_are_not_derived_and_each_word_keeps_one_term():
    q = analyze_query(shared_nlp(), "How did Nate promote his writings?")
    groups = {g[0]: g for g in q.term_groups}
    assert groups["nate"] == ("nate",)                         # "Nate" is no "nation"
    assert "promotion" in groups["promote"] and "write" in next(g for g in q.term_groups if "writing" in g)
    df = {"promotion": 2, "promote": 0, "nate": 5, "writing": 3, "write": 1}
    terms, _, fam = q.resolve_forms(df)
    assert terms == ["nate", "promotion", "writing"]
    assert fam == {"nate": "nate", "promotion": "promotion", "writing": "writing", "write": "writing"}


def test_forms_of_one_word_count_once_per_memory():
    # memory 0 says "writing" twice and "write" once, memory 1 "write" once
    hits = Hits(terms=["writing", "write", "joanna"], kw_row=np.array([0, 0, 1, 0]),
                kw_term=np.array([0, 1, 1, 2]), kw_tf=np.array([2.0, 1.0, 1.0, 1.0]), ent_match=np.zeros(0),
                ent_row=np.zeros(0, int), ent_idx=np.zeros(0, int))
    r = hits.restrict(["writing", "joanna"], {}, {"writing": "writing", "write": "writing", "joanna": "joanna"})
    got = sorted(zip(r.kw_row.tolist(), r.kw_term.tolist(), r.kw_tf.tolist()))
    assert got == [(0, 0, 3.0), (0, 1, 1.0), (1, 0, 1.0)]
    assert r.df() == {"writing": 2, "joanna": 1}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path_factory.mktemp("forms") / "f.duckdb"), config={"embedder": {"provider": "hashing"}})
    for text in ("Gina got new offers and promotions for her online store",
                 "Gina opened an online clothes store",
                 "Joanna is heavily invested in writing projects",
                 "Joanna finds comfort in her writing",
                 "Nate upgraded his equipment for gaming",
                 "Caroline painted a mural symbolizing courage",
                 "Caroline painted a mural of a sunset"):
        m.add(text, user_id="u", infer=False)
    yield m
    m.close()


@pytest.mark.parametrize("query, expected", [
    ("How did Gina promote her store?", "Gina got new offers and promotions for her online store"),
    ("What does Nate use to play games?", "Nate upgraded his equipment for gaming"),
    ("What symbols did Caroline paint?", "Caroline painted a mural symbolizing courage"),
])
def test_a_fact_that_says_the_word_in_another_form_is_a_keyword_hit(store, query, expected):
    res = store.search(query, user_id="u", explain=True, channels=["keyword"])["results"]
    assert res and res[0]["memory"] == expected


@pytest.mark.parametrize("query", ["How did Gina promote her store?", "What kind of writings does Joanna do?",
                                   "What does Nate use to play games?", "What symbols did Caroline paint?"])
def test_the_sql_engine_counts_the_same_forms(store, query):
    rows = {e: {r["id"]: (r["keyword"], r["bm25"]) for r in
                candidate_table(store._rt, query, filters={"user_id": "u"}, limit=100, engine=e).to_pylist()}
            for e in ("numpy", "sql")}
    assert rows["numpy"].keys() == rows["sql"].keys()
    assert any(v[1] > 0 for v in rows["numpy"].values())
    for i, (kw, bm) in rows["numpy"].items():
        assert rows["sql"][i] == pytest.approx((kw, bm), abs=1e-9)
