"""optimize(): re-clustering by scope changes no row and no result; a failure rolls back and keeps
the analyst HNSW index."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.core.errors import StoreWriteError
from memstore.store.optimize import INDEX_NAME

FACTS = ["lives in Boston", "is vegetarian", "plays the cello", "works at Google", "has a dog named Biscuit"]


@pytest.fixture
def filled(store_path):
    m = Memory(store_path, config={"embedder": {"provider": "hashing"}})
    for i in range(3):                       # interleaved users: the append order optimize undoes
        for user in ("ann", "bob", "cy"):
            m.add(f"{user.title()} {FACTS[i]}", user_id=user, infer=False)
    yield m
    m.close()


def _snapshot(m: Memory) -> dict:
    return {t: sorted(m.db.rows("s", sql=f'SELECT * EXCLUDE (embedding) FROM "{t}"' if t == "memories"
                                 else f'SELECT * FROM "{t}"'), key=repr)
            for t in ("memories", "keyword_postings", "entity_postings")}


def test_optimize_sorts_by_scope_and_changes_no_row_or_result(filled):
    before, hits = _snapshot(filled), filled.search("cello", user_id="bob")["results"]
    out = filled.optimize()
    assert out["memories"] == 9 and out["keyword_postings"] > 0 and out["seconds"] >= 0
    assert _snapshot(filled) == before
    assert filled.search("cello", user_id="bob")["results"] == hits
    users = [r[0] for r in filled.db.rows("u", sql="SELECT user_id FROM memories")]
    assert users == sorted(users)            # physical order is now by scope


def test_a_failed_optimize_rolls_back_and_keeps_the_hnsw_index(filled):
    filled.search_all("cello", top_k=3)      # builds the persisted index
    assert filled.db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]) == 1
    before = _snapshot(filled)
    filled.db.faults.add("write:optimize:clear:keyword_postings")
    try:
        with pytest.raises(StoreWriteError, match="optimize:clear:keyword_postings"):
            filled.optimize()
    finally:
        filled.db.faults.clear()
    assert _snapshot(filled) == before
    assert filled.db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]) == 1
    assert "plays the cello" in filled.search_all("cello", top_k=1)["results"][0]["memory"]
