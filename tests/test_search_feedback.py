"""Pseudo-relevance feedback (issue 32): when the first pass's best results agree on one topic, a
second pass reads the semantic signal from the query moved toward them, so a fact that shares no
word with the question but resembles those results comes up; when they disagree, nothing changes.
Real stores (hashing embedder), both fusion engines."""
from __future__ import annotations

import warnings

import pytest

from memstore import Memory
from memstore.retrieval.search import candidate_table

FACTS = ["Melanie went camping with her family in the mountains and roasted marshmallows",
         "Melanie went camping with her family in the mountains last summer",
         "Melanie went camping in the mountains with her kids and her family",
         "They went camping in the mountains and roasted marshmallows by the fire",   # no word of QUERY
         "Melanie's family has a dog named Max",
         "Melanie and her family moved to Ohio",
         "Melanie took up pottery classes",
         "Melanie's family loves board games",
         "Melanie's sister is a nurse",
         "Caroline paints landscapes"]
QUERY = "What does Melanie enjoy with her family on hikes?"
ANSWER = FACTS[3]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    base = tmp_path_factory.mktemp("feedback")
    out = {}
    for name, k in (("on", 3), ("off", 0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = Memory(str(base / f"{name}.duckdb"), config={"embedder": {"provider": "hashing"},
                                                             "search": {"feedback_k": k}})
        for i, fact in enumerate(FACTS):      # days apart: no neighbours, each fact its own conversation
            m.add(fact, user_id="u", infer=False, timestamp=f"2024-0{1 + i % 9}-{10 + i}T10:00")
        out[name] = m
    yield out
    for m in out.values():
        m.close()


def _ranked(m: Memory, query: str, engine: str = "numpy") -> list[dict]:
    t = candidate_table(m._rt, query, filters={"user_id": "u"}, limit=20, engine=engine).to_pylist()
    text = {r["id"]: r["memory"] for r in m.get_all(filters={"user_id": "u"}, top_k=100)["results"]}
    return [dict(r, memory=text[r["id"]]) for r in t]


def test_a_fact_in_other_words_comes_up_with_the_results_it_resembles(stores):
    off = [r["memory"] for r in _ranked(stores["off"], QUERY)]
    on = _ranked(stores["on"], QUERY)
    assert [r["memory"] for r in on][:3] == off[:3] == FACTS[2::-1]      # the camping facts lead both
    before = {r["memory"]: r for r in _ranked(stores["off"], QUERY)}[ANSWER]
    after = next(r for r in on if r["memory"] == ANSWER)
    assert before["semantic"] == 0.0                                      # no shared word: cosine 0
    assert after["semantic"] > 0.2
    # above the facts that merely share "Melanie" or nothing
    assert [r["memory"] for r in on].index(ANSWER) < min(
        [r["memory"] for r in on].index(FACTS[i]) for i in (6, 8, 9))
    assert off.index(ANSWER) > max(off.index(FACTS[i]) for i in (6, 8))


def test_no_feedback_when_the_best_results_disagree(stores):
    """'Caroline' matches one fact; the next best are unrelated to it and to each other."""
    query = "What does Caroline paint?"
    on = {r["memory"]: r["score"] for r in _ranked(stores["on"], query)}
    off = {r["memory"]: r["score"] for r in _ranked(stores["off"], query)}
    assert on == pytest.approx(off)
    sc = stores["on"].config.search
    sc.feedback_coherence = -1.0                    # no gate: the feedback drifts toward them
    try:
        ungated = {r["memory"]: r["score"] for r in _ranked(stores["on"], query)}
    finally:
        sc.feedback_coherence = 0.7
    assert ungated != pytest.approx(off)


@pytest.mark.parametrize("query", [QUERY, "Which trips does Melanie take with her family?"])
def test_sql_engine_runs_the_same_feedback(stores, query):
    got, ref = _ranked(stores["on"], query, "numpy"), _ranked(stores["on"], query, "sql")
    assert [r["memory"] for r in got] == [r["memory"] for r in ref]
    for a, b in zip(got, ref):
        for k in ("semantic", "keyword", "episode", "score"):
            assert a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-6), (a["memory"], k)
    assert next(r for r in ref if r["memory"] == ANSWER)["semantic"] > 0.2
