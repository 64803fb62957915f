"""A store in append order re-clusters itself by scope (started by its commits or its opening, never by a
search), in the background, in slices, without changing a result."""
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
    return [r[0] for r in m.db.rows("scalar", sql="SELECT user_id FROM memories ORDER BY rowid")]


def test_a_store_opened_in_append_order_reclusters_itself_in_slices_without_changing_a_result(store_path):
    m = _open(store_path, auto_cluster_min_rows=0)          # filled with the re-cluster off
    _fill(m)
    assert _user_order(m) != sorted(_user_order(m))
    before = {u: m.search("likes topic1 city1", user_id=u, top_k=5)["results"] for u in ("alice", "bob")}
    m.close()
    # opened with it on: the store checks at open and sorts itself in the background, one slice
    # (here: one user) per transaction; no search and no optimize() call
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.25, auto_cluster_slice_rows=1)
    state = auto_state(m.db)
    state.wait(30)
    assert state.runs and state.error is None
    assert state.runs[0]["memories"] == 12 and state.runs[0]["slices"] == 3 and state.runs[0]["complete"]
    assert _user_order(m) == sorted(_user_order(m))           # each user's rows now sit together
    assert m.db.meta("clustered_rows") == "12"
    after = {u: m.search("likes topic1 city1", user_id=u, top_k=5)["results"] for u in ("alice", "bob")}
    assert {u: [(r["id"], r["score"]) for r in v] for u, v in after.items()} == \
        {u: [(r["id"], r["score"]) for r in v] for u, v in before.items()}
    m.close()


def test_commits_start_the_recluster_and_searches_do_not(store_path):
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.25)
    _fill(m, rounds=3)                                   # 9 rows: below the size
    m.db.maintenance.every_s = 0                     # count at every check (the test's clock)
    for u in ("alice", "bob", "carol"):
        m.search("likes topic1", user_id=u)
    state = auto_state(m.db)
    assert not state.running() and not state.runs
    m.add("dave note: likes topic9", user_id="dave", infer=False)   # the 10th row's commit
    state.wait(30)
    assert state.runs and state.runs[0]["memories"] == 10 and state.error is None
    assert _user_order(m) == sorted(_user_order(m))
    m.close()


def test_no_recluster_below_the_size_or_share_and_none_when_turned_off(store_path, tmp_path):
    m = _open(store_path, auto_cluster_min_rows=100)     # 12 rows: too small to matter
    _fill(m)
    m.search("likes topic1", user_id="alice")
    assert not auto_state(m.db).running() and not auto_state(m.db).runs
    m.optimize()                                         # a manual re-cluster records its size
    assert m.db.meta("clustered_rows") == "12"
    m.close()
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.5)
    _fill(m, rounds=1)                                   # 3 new rows of 15: tail 20% < 50%
    m.search("likes topic1", user_id="alice")
    assert not auto_state(m.db).runs
    m.close()
    off = _open(str(tmp_path / "off.duckdb"), auto_cluster_min_rows=0)
    _fill(off)
    off.search("likes topic1", user_id="alice")
    assert not auto_state(off.db).runs
    off.close()


def test_auto_cluster_settings_are_validated(store_path):
    from memstore.core.errors import ConfigError

    with pytest.raises(ConfigError, match="auto_cluster_share"):
        _open(store_path, auto_cluster_share=1.5)
