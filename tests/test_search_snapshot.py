"""Search snapshots (memstore/retrieval/snapshot.py): a hot scope's searches read no statement, give
exactly what the statements give, and every write (add, update, delete, raw SQL) or expiry is seen."""
from __future__ import annotations

import datetime as dt
import warnings

import pytest

from memstore import Memory
from memstore.retrieval.search import candidate_table
from memstore.retrieval.snapshot import snapshots_for

FACTS = ["Alice lives in Boston", "Alice loves hiking in the White Mountains", "Alice's sister Carol works at Google",
         "Biscuit the greyhound hates thunderstorms", "Alice plays the cello"]


@pytest.fixture()
def mem(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    for text in FACTS:
        m.add([{"role": "user", "content": text, "name": "Alice"}], user_id="alice", infer=False)
    m.add("Bob lives in Denver", user_id="bob", infer=False)
    yield m
    m.close()


def _search(m, q, **kw):
    return [(r["id"], r["score"], r["memory"], r["explain"])
            for r in m.search(q, user_id="alice", top_k=10, explain=True, **kw)["results"]]


def _same(a, b):
    """Same results and explain values (recency, so score, moves by ~1e-7 when a second passes)."""
    assert [(x[0], x[2]) for x in a] == [(y[0], y[2]) for y in b]
    for x, y in zip(a, b):
        assert x[1] == pytest.approx(y[1], abs=1e-6)
        assert x[3] == {k: pytest.approx(v, abs=1e-6) if isinstance(v, float) else v for k, v in y[3].items()}


def _stats(m):
    return dict(snapshots_for(m.db.scope_cache).stats)


def test_snapshot_gives_what_the_statements_give(mem):
    for q in ("where does alice live", "Carol Google", "hikes in the mountains", "Alice", "zanzibar"):
        cold = candidate_table(mem._rt, q, filters={"user_id": "alice"}, limit=100, engine="sql").to_pylist()
        first = _search(mem, q)
        second = _search(mem, q)            # from the snapshot
        _same(first, second)
        hot = candidate_table(mem._rt, q, filters={"user_id": "alice"}, limit=100).to_pylist()
        assert [r["id"] for r in hot] == [r["id"] for r in cold]
        for a, b in zip(hot, cold):
            assert a["score"] == pytest.approx(b["score"], abs=1e-6)
    assert _stats(mem)["hits"] >= 5
    strip = lambda res: [{k: v for k, v in r.items() if k not in ("score", "explain")}  # noqa: E731
                         for r in res["results"]]
    cold = strip(mem.search("Alice Boston", user_id="alice", include_superseded=True))   # never a snapshot
    assert strip(mem.search("Alice Boston", user_id="alice")) == cold                    # the whole records


def test_every_write_is_seen(mem):
    _search(mem, "Boston")
    _search(mem, "Boston")
    mem.add("Alice bought a Boston terrier", user_id="alice", infer=False)
    assert any(r[2] == "Alice bought a Boston terrier" for r in _search(mem, "Boston"))
    _search(mem, "Boston")
    boston = next(r for r in _search(mem, "Boston") if r[2] == "Alice lives in Boston")
    mem.delete(boston[0])
    assert all(r[0] != boston[0] for r in _search(mem, "Boston"))
    other = _search(mem, "cello")[0]
    mem.update(other[0], "Alice plays the violin")
    assert "Alice plays the violin" in [r[2] for r in _search(mem, "violin")]
    _search(mem, "violin")
    mem.db.con.execute("DELETE FROM memories WHERE memory = 'Alice plays the violin'")   # behind the API
    assert "Alice plays the violin" not in [r[2] for r in _search(mem, "violin")]


def test_expiry_applies_per_search(mem):
    soon = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=1)
    mem.add("Alice is in Paris this week", user_id="alice", infer=False, expiration_date=soon)
    assert "Alice is in Paris this week" in [r[2] for r in _search(mem, "Paris")]
    _search(mem, "Paris")                          # builds the snapshot
    import time
    time.sleep(1.2)
    before = _stats(mem).get("hits", 0)
    assert "Alice is in Paris this week" not in [r[2] for r in _search(mem, "Paris")]
    assert _stats(mem)["hits"] > before            # from the snapshot, expired row dropped


def test_writes_to_other_scopes_leave_a_snapshot_in_use(mem):
    """An add, a delete or an update in bob's scope says so: alice's snapshot is still used, and still
    gives what the statements give. A write that names no scope (raw SQL) and a write to alice's own
    scope are seen."""
    _search(mem, "Boston")
    _search(mem, "Boston")                         # builds alice's snapshot
    builds = _stats(mem).get("builds", 0)
    bob = mem.add("Bob moved to Boston", user_id="bob", infer=False)["results"][0]["id"]
    mem.add("Bob plays chess in Boston", user_id="bob", agent_id="coach", infer=False)
    mem.update(bob, "Bob moved to Austin")
    mem.delete(bob)
    hits = _stats(mem).get("hits", 0)
    hot = _search(mem, "Boston")
    assert _stats(mem)["hits"] == hits + 1 and _stats(mem)["builds"] == builds     # the same snapshot
    cold = candidate_table(mem._rt, "Boston", filters={"user_id": "alice"}, limit=100, engine="sql").to_pylist()
    assert [r[0] for r in hot] == [r["id"] for r in cold][:len(hot)]
    assert all("Bob" not in r[2] for r in hot)
    mem.add("Alice bought a Boston terrier", user_id="alice", agent_id="pets", infer=False)
    assert "Alice bought a Boston terrier" in [r[2] for r in _search(mem, "Boston")]   # her scope: seen
    _search(mem, "Boston")
    mem.db.con.execute("DELETE FROM memories WHERE memory = 'Alice bought a Boston terrier'")  # names no scope
    assert "Alice bought a Boston terrier" not in [r[2] for r in _search(mem, "Boston")]

