"""The keyword signal is the share of the query's words (by idf) a memory matches: each word's BM25
part counts up to its idf, so a short memory, or one that repeats a word, cannot stand in for the
words it lacks (issue 32: "What is Caroline excited about in the adoption process?" lost the fact
that answers it, three by cosine, to facts saying "adoption" more often or in fewer words). The
keyword channel still ranks by the whole BM25. Real stores (hashing embedder), both engines."""
from __future__ import annotations

import math
import warnings

import pytest

from memstore import Memory
from memstore.retrieval.search import candidate_table

FACTS = ["Adoption adoption adoption",                              # one query word, three times, short
         "Caroline started the adoption process with an agency in the city",   # every query word
         "Caroline went to a pride parade with her friends last summer",
         "Caroline paints sunsets and lakes in her free time",
         "Melanie took the kids camping in the mountains"]
QUERY = "Caroline adoption process"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path_factory.mktemp("share") / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    for fact in FACTS:
        m.add(fact, user_id="u", infer=False)
    yield m
    m.close()


@pytest.mark.parametrize("engine", ["numpy", "sql"])
def test_a_memory_repeating_one_query_word_gets_that_word_s_share_only(store, engine):
    t = candidate_table(store._rt, QUERY, filters={"user_id": "u"}, limit=20, engine=engine,
                        channels=("keyword",)).to_pylist()
    text = {r["id"]: r["memory"] for r in store.get_all(filters={"user_id": "u"}, top_k=100)["results"]}
    rows = {text[r["id"]]: r for r in t}
    short, full = rows[FACTS[0]], rows[FACTS[1]]
    assert short["bm25"] > full["bm25"] * 0.5                   # the channel: whole BM25 parts
    n, df = len(FACTS), {"caroline": 3, "adoption": 2, "process": 1}
    idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
    # before: min(1, BM25 / sum idf), 0.54 here: almost twice the share of the one word it says
    assert short["keyword"] == pytest.approx(idf["adoption"] / sum(idf.values()), abs=1e-9)
    assert full["keyword"] > short["keyword"]
    assert all(0 <= r["keyword"] <= 1 for r in t)
