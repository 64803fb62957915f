"""The sliced re-cluster (memstore/store/recluster.py) under load and under a kill: adds and searches
that run between its slices lose nothing and change no result; DuckDB's automatic checkpoint is held
off during the pass and restored after; a process killed mid-pass (between slices or inside one)
leaves every memory exactly once, and the next pass completes."""
from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from pathlib import Path

from memstore import Memory
from memstore.store.recluster import maintenance_for, recluster_pass

REPO = Path(__file__).resolve().parent.parent
USERS = [f"u{i:02d}" for i in range(12)]


def _open(path: str) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(path, config={"embedder": {"provider": "hashing"}, "search": {"auto_cluster_min_rows": 0}})


def _fill(path: str) -> None:
    m = _open(path)
    for i in range(3):                  # users interleave: append order
        for u in USERS:
            m.add(f"{u} visited city{i} and likes topic{(i + len(u)) % 3}", user_id=u, infer=False)
    m.close()


def _state(m: Memory) -> tuple:
    """Every memory id (with repeats), postings per memory, and each user's ranked results."""
    db = m.db
    ids = sorted(r[0] for r in db.rows("x", sql="SELECT id FROM memories"))
    kw = db.rows("x", sql="SELECT memory_id, count(*) FROM keyword_postings GROUP BY 1 ORDER BY 1")
    ent = db.rows("x", sql="SELECT memory_id, count(*) FROM entity_postings GROUP BY 1 ORDER BY 1")
    results = {u: [(r["id"], round(r["score"], 9)) for r in m.search("city1 topic2", user_id=u, top_k=5)["results"]]
               for u in USERS}
    return ids, kw, ent, results


def _user_order(m: Memory) -> list[str]:
    return [r[0] for r in m.db.rows("x", sql="SELECT user_id FROM memories WHERE user_id LIKE 'u%' ORDER BY rowid")]


def test_adds_and_searches_between_slices_lose_nothing_and_change_no_result(store_path):
    _fill(store_path)
    m = _open(store_path)
    before = _state(m)
    db = m.db
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(recluster_pass(db, slice_rows=1, pause=2.0)))
    thread.start()
    added, searched_during = [], 0
    while thread.is_alive() or not added:
        added.append(m.add(f"fresh note {len(added)}", user_id=f"new{len(added) % 3}", infer=False))
        ids, _, _, results = _state(m)
        assert results == before[3]             # mid-pass: the same ranking, scores included
        assert set(before[0]) <= set(ids) and len(ids) == len(set(ids)) == len(before[0]) + len(added)
        searched_during += thread.is_alive()
    thread.join()
    assert out["complete"] and out["slices"] >= len(USERS)       # one user a slice
    assert searched_during >= 2, "the adds and searches did not overlap the pass"
    ids, kw, ent, results = _state(m)
    assert results == before[3]
    assert len(ids) == len(set(ids)) == len(before[0]) + len(added)
    assert set(kw) >= set(before[1]) and set(ent) >= set(before[2])     # every posting kept, none doubled
    assert _user_order(m) == sorted(_user_order(m))
    m.close()


def test_the_automatic_checkpoint_is_held_during_the_pass_and_restored_after(store_path):
    _fill(store_path)
    m = _open(store_path)
    db = m.db
    setting = "SELECT current_setting('checkpoint_threshold')"
    before = db.scalar(setting)
    during: list[str] = []
    db.commit_listeners.append(lambda d: during.append(d.scalar(setting)))
    out = recluster_pass(db, slice_rows=4)
    assert out["complete"] and len(during) == out["slices"] + 1      # the slices and the clustered mark
    assert set(during) == {"1.0 TiB"} and before != "1.0 TiB"
    assert db.scalar(setting) == before
    assert maintenance_for(db).active == 0
    m.close()


CHILD = """
import os, sys, warnings
sys.path.insert(0, {repo!r})
from memstore import Memory
from memstore.store.recluster import recluster_pass
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = Memory({path!r}, config={{"embedder": {{"provider": "hashing"}}, "search": {{"auto_cluster_min_rows": 0}}}})
db = m.db
slices = []
def trace(name, sql, params, took):
    if name == "optimize:refill:keyword_postings":
        slices.append(name)
        if {where!r} == "inside" and len(slices) == 3:
            os._exit(9)                  # inside the third slice's transaction
db.trace = trace
def listener(d):
    if {where!r} == "between" and len(slices) == 3:
        os._exit(9)                      # the third slice committed, the fourth not begun
db.commit_listeners.append(listener)
recluster_pass(db, slice_rows=2{pass_args})
print("NOT KILLED")
"""                                      # also tests/test_recluster_tail.py's (pass_args=", full=False")


def test_a_pass_killed_inside_or_between_slices_loses_nothing(tmp_path):
    for where in ("inside", "between"):
        path = str(tmp_path / where / "store.duckdb")
        _fill(path)
        m = _open(path)
        before = _state(m)
        m.close()
        child = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), path=path, where=where, pass_args="")],
                               capture_output=True, text=True, timeout=120, check=False)
        assert child.returncode == 9, (where, child.stdout, child.stderr)
        m = _open(path)
        assert _state(m) == before, where           # the WAL's committed slices replayed, the open one gone
        assert m.db.meta("clustered_rows") in (None, "0"), where
        out = m.optimize()
        assert _state(m) == before and _user_order(m) == sorted(_user_order(m)), (where, out)
        m.close()
