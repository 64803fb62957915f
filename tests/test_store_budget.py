"""A store's memory is bounded by its config: DuckDB's memory_limit and the scope cache's byte
budget (least recently used scopes go first; search then reads cold scopes' vectors in its scan),
and a re-cluster pass moves each slice's rows without changing one (writers wait a slice at most)."""
from __future__ import annotations

import threading
import warnings

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError
from memstore.store.recluster import recluster_pass


def _open(path: str, **config) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(path, config={"embedder": {"provider": "hashing"}, **config})


def _rows(m: Memory) -> dict:
    return {t: sorted(m.db.rows("s", sql=f"SELECT * EXCLUDE (embedding) FROM {t}" if t == "memories"
                                else f"SELECT * FROM {t}"), key=repr)
            for t in ("memories", "keyword_postings", "entity_postings")}


def test_memory_limit_is_set_and_checked(store_path):
    m = _open(store_path, memory_limit="256MiB")
    assert m.db.scalar("SELECT current_setting('memory_limit')") == "256.0 MiB"
    m.close()
    with pytest.raises(ConfigError, match="memory_limit"):
        _open(store_path, memory_limit="256MB'; SELECT 1; --")
    with pytest.raises(ConfigError, match="scope_cache_mb"):
        _open(store_path, scope_cache_mb=-1)


def test_the_scope_cache_keeps_to_its_byte_budget_and_search_stays_right(store_path):
    m = _open(store_path)
    for i in range(30):
        for user in ("ann", "bob", "cy", "dee"):
            m.add(f"{user} fact {i}: likes topic{i} in city{i % 3}", user_id=user, infer=False)
    want = {u: m.search("likes topic7 city1", user_id=u, top_k=5)["results"] for u in ("ann", "dee")}
    m.close()
    m = _open(store_path, scope_cache_mb=0)          # no scope fits: every scope but the newest goes
    cache = m.db.scope_cache
    got = {u: m.search("likes topic7 city1", user_id=u, top_k=5)["results"] for u in ("ann", "dee")}
    assert {u: [(r["id"], round(r["score"], 9)) for r in v] for u, v in got.items()} == \
        {u: [(r["id"], round(r["score"], 9)) for r in v] for u, v in want.items()}
    for user in ("ann", "bob", "cy"):                # add() loads each scope: the older ones are evicted
        m.add(f"{user} new fact: plays chess", user_id=user, infer=False)
    assert cache.fits_store is False and cache.stats["evictions"] >= 2
    assert len(cache.entries) == 1 and cache.nbytes > 0
    again = m.add("cy new fact: plays chess", user_id="cy", infer=False)["results"]      # still de-duplicates
    assert [r["event"] for r in again] == ["NONE"] and again[0]["deduplicated"] is True
    m.close()


def test_a_snapshot_of_a_store_larger_than_the_cache_reads_its_own_vectors(store_path):
    from memstore.retrieval.snapshot import snapshots_for

    m = _open(store_path)
    for i in range(20):
        for user in ("ann", "bob"):
            m.add(f"{user} fact {i}: likes topic{i} in city{i % 3}", user_id=user, infer=False)
    want = [(r["id"], round(r["score"], 9)) for r in m.search("likes topic7 city1", user_id="ann", top_k=5)["results"]]
    m.close()
    m = _open(store_path, scope_cache_mb=0)
    stats = snapshots_for(m.db.scope_cache).stats
    reads = []
    for _ in range(3):          # statements, the snapshot's build (vectors from its own scan), the snapshot
        got = [(r["id"], round(r["score"], 9)) for r in m.search("likes topic7 city1", user_id="ann", top_k=5)["results"]]
        assert got == want
        reads.append(m.db.scope_cache.stats["vector_reads"])
    assert m.db.scope_cache.fits_store is False
    assert stats["builds"] == 1 and stats["hits"] == 1
    assert reads[0] == reads[1] == reads[2]          # neither the build nor the snapshot asked the cache
    m.close()


def test_a_pass_sorts_in_slices_changes_no_row_and_lets_a_writer_in_between(store_path):
    m = _open(store_path, search={"auto_cluster_min_rows": 0})
    users = [f"user{i}" for i in range(6)]
    for i in range(4):
        for user in users:
            m.add(f"{user} note {i}: likes topic{i} and entity{i % 2}", user_id=user, infer=False)
    before = _rows(m)
    order = lambda: [r[0] for r in m.db.rows("o", sql="SELECT user_id FROM memories ORDER BY rowid")]  # noqa: E731
    assert order() != sorted(order())
    added, outs = [], []
    # the pass in the background; an add meanwhile waits for one slice at most, not the pass
    t = threading.Thread(target=lambda: outs.append(recluster_pass(m.db, slice_rows=8, pause=0.5)))
    t.start()
    added.append(m.add("user9 note: arrives mid-pass", user_id="user9", infer=False))
    t.join(30)
    out = outs[0]
    assert out["slices"] in (3, 4) and out["complete"] and out["memories"] in (24, 25)   # the add may come first
    kept = [u for u in order() if u != "user9"]
    assert kept == sorted(kept)                      # each user's rows sit together, in user order
    after = _rows(m)
    assert len(added[0]["results"]) == 1
    assert {t: [r for r in rows if "user9" not in repr(r)] for t, rows in after.items()} == before
    m.close()
