"""The time signal: a query that names a period ranks what was said then first; one that names
none is scored exactly as without the signal (weight 0, same denominator)."""
from __future__ import annotations

import math
import warnings

import pytest

from memstore import Memory

FACTS = [  # the same kind of fact, told on different days: only the time tells them apart
    ("Maria started a pottery class", "2023-03-02T10:00"),
    ("Maria started a dance class", "2023-06-03T18:00"),
    ("Maria started a chess class", "2023-09-20T09:00"),
    ("Maria started a yoga class", "2024-01-15T07:00"),
]
QUERIES = [
    ("Which class did Maria start on 3 June, 2023?", "dance"),
    ("Which class did Maria start in September 2023?", "chess"),
    ("Which class did Maria start in March?", "pottery"),
    ("Which class did Maria start in 2024?", "yoga"),
]


@pytest.fixture(scope="module")
def mem(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path_factory.mktemp("time") / "t.duckdb"), config={"embedder": {"provider": "hashing"}})
    for text, when in FACTS:
        m.add([{"role": "user", "content": text}], user_id="maria", infer=False, timestamp=when)
    yield m
    m.close()


def _top(m: Memory, query: str, **kw) -> list[dict]:
    return m.search(query, user_id="maria", top_k=4, explain=True, **kw)["results"]


@pytest.mark.parametrize("query, want", QUERIES)
def test_a_named_period_ranks_what_was_said_then_first(mem, query, want):
    res = _top(mem, query)
    assert want in res[0]["memory"], [r["memory"] for r in res]
    assert res[0]["explain"]["time"] == 1.0
    assert all(0.0 <= r["explain"]["time"] < 0.5 for r in res[1:])


def test_without_the_time_signal_the_period_decides_nothing(mem):
    """The same first result for all four periods: at most one of them right, so the signal decides."""
    firsts = {_top(mem, q, weights={"time": 0.0})[0]["memory"] for q, _want in QUERIES}
    assert len(firsts) == 1


def test_time_decays_with_distance_from_the_period(mem):
    res = {r["memory"]: r["explain"]["time"] for r in _top(mem, "Which class did Maria start on 10 June, 2023?")}
    dance = res["Maria started a dance class"]          # 3 June 18:00: 6 days 6 hours before 10 June
    assert math.isclose(dance, 2 ** (-(6 + 6 / 24) / 7), rel_tol=1e-6)
    assert res["Maria started a pottery class"] < 1e-3


def test_a_query_without_a_period_is_scored_as_before(mem):
    q = "Which class did Maria start?"
    with_time = _top(mem, q)
    without = _top(mem, q, weights={"time": 0.0})
    assert [r["id"] for r in with_time] == [r["id"] for r in without]
    assert [r["score"] for r in with_time] == [r["score"] for r in without]
    assert all(r["explain"]["time"] == 0.0 for r in with_time)


def test_time_is_a_fusion_feature_off_for_a_single_channel(mem):
    q = "Which class did Maria start in September 2023?"
    sem = mem.search(q, user_id="maria", top_k=4, channels=["semantic"], explain=True)["results"]
    ref = mem.search(q, user_id="maria", top_k=4, channels=["semantic"], explain=True, weights={"time": 0.0})["results"]
    assert [r["score"] for r in sem] == [r["score"] for r in ref]


def test_config_validates_the_time_keys(tmp_path):
    from memstore.core.errors import ConfigError

    with pytest.raises(ConfigError, match="w_time"):
        Memory(str(tmp_path / "a.duckdb"), config={"embedder": {"provider": "hashing"}, "search": {"w_time": -1}})
    with pytest.raises(ConfigError, match="time_half_life_days"):
        Memory(str(tmp_path / "b.duckdb"), config={"embedder": {"provider": "hashing"},
                                                   "search": {"time_half_life_days": 0}})
