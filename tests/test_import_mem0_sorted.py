"""An import of a mem0 store through the add path writes in scope order (issue 49): its rows form
a sorted run the re-cluster records, so the store's next pass is a tail pass over what came after,
not a full rewrite; a store whose earlier rows were not sorted records no run (the pass sorts it)."""
from __future__ import annotations

import uuid
import warnings

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

from memstore import Memory
from memstore.integrations.mem0_fixture import mem0_payload, write_mem0_store
from memstore.store.cluster_runs import read_runs
from memstore.store.recluster import CLUSTERED_TABLES, recluster_pass

USERS = [f"user{i}" for i in (3, 1, 4, 0, 5, 2)]


def _open(path: str) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(path, config={"embedder": {"provider": "hashing"}, "search": {"auto_cluster_min_rows": 0}})


@pytest.fixture
def interleaved(tmp_path):
    """A mem0 store whose memories alternate between users (mem0's own order: time)."""
    rng = np.random.default_rng(3)
    points = []
    for i in range(5):
        for u in USERS:
            v = rng.normal(size=8)
            points.append((str(uuid.uuid4()), (v / np.linalg.norm(v)).tolist(),
                           mem0_payload(f"{u} visited Porto{i} with Ana and likes topic{i}",
                                        created_at=f"2024-03-0{i + 1}T10:00:00+00:00", user_id=u,
                                        agent_id="bot" if i == 2 else None)))
    qdir = tmp_path / "qdrant"
    write_mem0_store(qdir, None, points, dim=8)
    return str(qdir)


def _users_by_rowid(m: Memory, table: str) -> list[str]:
    return [r[0] for r in m.db.rows("x", sql=f"SELECT user_id FROM {table} ORDER BY rowid")]


def test_an_import_into_an_empty_store_is_one_sorted_run_and_the_next_pass_a_tail_pass(interleaved, store_path):
    m = _open(store_path)
    report = m.import_mem0(interleaved, batch_size=4)      # chunks smaller than a user: order spans chunks
    assert report["imported"] == 5 * len(USERS)
    for table in CLUSTERED_TABLES:
        users = _users_by_rowid(m, table)
        assert users and users == sorted(users), table
    assert len(read_runs(m.db)) == 1 and int(m.db.meta("clustered_rows")) == report["imported"]
    m.add("a later note", user_id="user0", infer=False)
    out = recluster_pass(m.db, full=False)
    assert out["mode"] == "tail" and out["memories"] == 1 and len(read_runs(m.db)) == 2
    assert m.search("Porto3", user_id="user4")["results"]
    m.close()


def test_an_import_after_unsorted_adds_records_no_run(interleaved, store_path):
    m = _open(store_path)
    for u in ("zed", "amy"):                              # append order, never sorted
        m.add(f"{u} likes tea", user_id=u, infer=False)
    report = m.import_mem0(interleaved)
    assert report["imported"] == 5 * len(USERS)
    assert read_runs(m.db) == []                          # the rows before it are not a sorted run
    assert recluster_pass(m.db, full=False)["mode"] == "full"
    m.close()
