"""Time words ("when", "last weekend", "recently", month names, years, "how long") are not keyword
terms nor entity n-grams: the time signal reads dates, and as words they matched the time phrases
of unrelated facts ("What did John volunteer at last weekend?" lifted every fact told "last weekend")."""
from __future__ import annotations

import warnings

import pytest

from memstore import Memory
from memstore.providers.nlp import SpacyNLP
from memstore.retrieval.query_analysis import analyze_query
from memstore.retrieval.query_time import is_time_word, query_periods


@pytest.fixture(scope="module")
def nlp():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SpacyNLP()


def _words(nlp, query: str) -> set[str]:
    return {t for g in analyze_query(nlp, query).term_groups for t in g}


def test_time_words_are_not_keyword_terms_but_still_name_periods(nlp):
    q = "What did Maria paint recently, last weekend and in May 2023?"
    words = _words(nlp, q)
    assert {"maria", "paint"} <= words
    assert not words & {"recently", "weekend", "may", "2023"}
    assert query_periods(q)            # the time signal still reads the month and the year
    assert "long" not in _words(nlp, "How long has Jon been dancing?")
    assert "long" in _words(nlp, "Where did Maria go on a long hike?")     # a length, not a duration


def test_time_phrases_are_not_entity_candidates(nlp):
    ents = analyze_query(nlp, "What did Maria do last weekend in June?").entity_norms
    assert "maria" in ents
    assert not {"weekend", "last weekend", "june"} & set(ents)
    assert [w for w in ("When", "yesterday", "1999", "Tuesday", "hike") if is_time_word(w)] == \
        ["When", "yesterday", "1999", "Tuesday"]


def test_a_shared_time_phrase_finds_nothing_by_keyword(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "t.duckdb"), config={"embedder": {"provider": "hashing"}})
    try:
        m.add("Maria went hiking with her church friends last weekend", user_id="u", infer=False)
        m.add("Maria volunteered at the shelter recently", user_id="u", infer=False)
        m.add("John volunteered at a career fair", user_id="u", infer=False)
        got = m.search("Which event did John volunteer at last weekend?", user_id="u",
                       channels=["keyword"])["results"]
        assert [r["memory"] for r in got][:1] == ["John volunteered at a career fair"]
        assert "Maria went hiking with her church friends last weekend" not in [r["memory"] for r in got]
    finally:
        m.close()
