"""Results cross from DuckDB to Arrow in batches of ARROW_BATCH_ROWS (memstore/store/database.py):
a scope larger than one batch comes back as a chunked table. Search, its snapshot (built on the
second search) and the SQL reference must still agree on it, and get_all must return every row."""
from __future__ import annotations

import warnings

from memstore import Memory
from memstore.retrieval.search import candidate_table
from memstore.retrieval.snapshot import snapshots_for
from memstore.store import database

TOPICS = ["tea", "chess", "sailing", "violin", "pottery", "cycling", "baking", "astronomy"]


def test_a_scope_longer_than_one_arrow_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(database, "ARROW_BATCH_ROWS", 64)      # 300 memories: five batches
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    try:
        facts = [f"Alex mentioned {TOPICS[i % 8]} under the code k{i}x" for i in range(300)]
        m.add([{"role": "user", "content": f} for f in facts], user_id="alex", infer=False)
        assert m.db.arrow("t", sql="SELECT * FROM range(300)").column(0).num_chunks == 5
        assert len(m.get_all(user_id="alex", top_k=1000)["results"]) == 300
        ref = candidate_table(m._rt, "chess k17x", filters={"user_id": "alex"}, limit=10, engine="sql")
        stats = snapshots_for(m.db.scope_cache).stats
        got = []
        for _ in range(3):          # statements, then the snapshot's build, then the snapshot
            got.append(m.search("chess k17x", user_id="alex", top_k=10)["results"])
        assert stats["builds"] >= 1 and stats["hits"] >= 1
        want = ref.column("id").to_pylist()
        for results in got:
            assert [r["id"] for r in results] == want
        assert got[0][0]["memory"] == "Alex mentioned chess under the code k17x"
    finally:
        m.close()
