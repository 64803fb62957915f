"""Search re-clusters a store in append order by itself, in the background, without changing a result."""
from __future__ import annotations

import warnings

import pytest

from memstore import Memory
from memstore.store.optimize import auto_state


def _open(path: str, **search) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(path, config={"embedder": {"provider": "hashing"}, "search": search})


def _fill(m: Memory, rounds: int = 4) -> None:
    for i in range(rounds):          # users interleave: the append order a re-cluster undoes
        for user in ("carol", "alice", "bob"):
            m.add(f"{user} note {i}: likes topic{i} and city{i % 2}", user_id=user, infer=False)


def _user_order(m: Memory) -> list[str]:
    return [r[0] for r in m._rt.db.rows("scalar", sql="SELECT user_id FROM memories ORDER BY rowid")]


def test_a_search_on_a_store_in_append_order_reclusters_it_in_the_background(store_path):
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.25)
    _fill(m)
    assert _user_order(m) != sorted(_user_order(m))
    before = {u: m.search("likes topic1 city1", user_id=u, top_k=5)["results"] for u in ("alice", "bob")}
    state = auto_state(m._rt.db)
    state.wait(30)
    assert state.runs and state.runs[0]["memories"] == 12 and state.error is None
    assert _user_order(m) == sorted(_user_order(m))           # each user's rows now sit together
    assert m._rt.db.meta("clustered_rows") == "12"
    after = {u: m.search("likes topic1 city1", user_id=u, top_k=5)["results"] for u in ("alice", "bob")}
    assert {u: [(r["id"], r["score"]) for r in v] for u, v in after.items()} == \
        {u: [(r["id"], r["score"]) for r in v] for u, v in before.items()}
    m.close()


def test_no_recluster_below_the_size_or_share_and_none_when_turned_off(store_path, tmp_path):
    m = _open(store_path, auto_cluster_min_rows=100)     # 12 rows: too small to matter
    _fill(m)
    m.search("likes topic1", user_id="alice")
    assert not auto_state(m._rt.db).running() and not auto_state(m._rt.db).runs
    m.optimize()                                         # a manual re-cluster records its size
    assert m._rt.db.meta("clustered_rows") == "12"
    m.close()
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.5)
    _fill(m, rounds=1)                                   # 3 new rows of 15: tail 20% < 50%
    m.search("likes topic1", user_id="alice")
    assert not auto_state(m._rt.db).runs
    m.close()
    off = _open(str(tmp_path / "off.duckdb"), auto_cluster_min_rows=0)
    _fill(off)
    off.search("likes topic1", user_id="alice")
    assert not auto_state(off._rt.db).runs
    off.close()


def test_auto_cluster_settings_are_validated(store_path):
    from memstore.core.errors import ConfigError

    with pytest.raises(ConfigError, match="auto_cluster_share"):
        _open(store_path, auto_cluster_share=1.5)
