"""Import of a real mem0-format store (Qdrant local mode + mem0's history.db), written with
qdrant-client in mem0's payload layout, then compared memory by memory."""
from __future__ import annotations

import hashlib
import uuid

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

from memstore import Memory
from memstore.cli import main
from memstore.governance.doctor import assert_store_healthy
from memstore.ingest.mem0_import import Mem0ImportError
from memstore.integrations.mem0_fixture import mem0_payload, write_mem0_store

DIM = 384   # the bundled MiniLM's dimension: --keep-vectors applies


def _id() -> str:
    return str(uuid.uuid4())


def _vec(rng: np.random.Generator, dim: int = DIM) -> list[float]:
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


@pytest.fixture
def mem0_store(tmp_path):
    rng = np.random.default_rng(7)
    ids = {k: _id() for k in ("lisbon", "veg", "cello", "agent", "run", "pacific", "updated", "nodata",
                              "noident", "twin", "deleted")}
    t = "2024-03-01T10:00:00+00:00"
    points = [
        (ids["lisbon"], _vec(rng), mem0_payload("Lives in Lisbon with her sister Maya", created_at=t,
                                                user_id="alice", role="user", category="home")),
        (ids["veg"], _vec(rng), mem0_payload("Is vegetarian", created_at="2024-03-02T09:00:00+00:00",
                                             user_id="alice", metadata={"source": "onboarding"})),
        (ids["cello"], _vec(rng), mem0_payload("Plays the cello", created_at=t, user_id="bob", actor_id="Bob")),
        (ids["agent"], _vec(rng), mem0_payload("Answers in French", created_at=t, user_id="alice", agent_id="travel-bot")),
        (ids["run"], _vec(rng), mem0_payload("Is planning a trip to Kyoto", created_at=t, user_id="carol", run_id="s1")),
        (ids["pacific"], _vec(rng), mem0_payload("Works at Acme as a welder", created_at="2024-03-05T08:30:00-08:00",
                                                 user_id="carol", text_lemmatized="work acme welder")),
        (ids["updated"], _vec(rng), mem0_payload("Prefers window seats", created_at=t,
                                                 updated_at="2024-04-01T12:00:00+00:00", user_id="alice")),
        (ids["nodata"], _vec(rng), {"user_id": "alice", "hash": "x", "created_at": t}),
        (ids["noident"], _vec(rng), mem0_payload("Orphan fact", created_at=t)),
        (ids["twin"], _vec(rng), mem0_payload("is vegetarian.", created_at="2024-05-01T00:00:00Z",
                                                                user_id="alice")),
    ]
    history = [
        {"id": _id(), "memory_id": ids["updated"], "event": "ADD", "old_memory": None,
         "new_memory": "Prefers aisle seats", "created_at": t, "updated_at": t},
        {"id": _id(), "memory_id": ids["updated"], "event": "UPDATE", "old_memory": "Prefers aisle seats",
         "new_memory": "Prefers window seats", "created_at": "2024-04-01T12:00:00+00:00"},
        {"id": _id(), "memory_id": ids["lisbon"], "event": "ADD", "new_memory": "Lives in Lisbon with her sister Maya",
         "created_at": t, "role": "user"},
        {"id": _id(), "memory_id": ids["deleted"], "event": "ADD", "new_memory": "Old fact", "created_at": t},
        {"id": _id(), "memory_id": ids["deleted"], "event": "DELETE", "old_memory": "Old fact", "created_at": t},
    ]
    qdir, hist = tmp_path / "qdrant", tmp_path / "history.db"
    write_mem0_store(qdir, hist, points, dim=DIM, history=history)
    return {"qdrant": str(qdir), "history": str(hist), "ids": ids, "points": {p[0]: p for p in points}}


def test_import_keeps_ids_text_identity_metadata_times_and_history(mem0_store, store_path):
    ids = mem0_store["ids"]
    with Memory(store_path) as m:
        report = m.import_mem0(mem0_store["qdrant"], history=mem0_store["history"])
        assert report["read"] == 10 and report["imported"] == 7 and report["skipped"] == 3
        assert report["skipped_by_reason"] == {
            "no text (payload has no 'data' string)": 1,
            "bad identity: no identity given — pass at least one of user_id=, agent_id=, run_id=": 1,
            "same text as another current memory of the scope": 1}
        assert report["history_imported"] == 3 and report["vectors"] == "re-embedded"
        assert report["history_skipped_by_reason"] == {"memory no longer in the mem0 store (its scope is unknown)": 2}

        lis = m.get(ids["lisbon"])
        assert lis["memory"] == "Lives in Lisbon with her sister Maya" and lis["user_id"] == "alice"
        assert lis["metadata"] == {"category": "home", "mem0": {"hash": hashlib.md5(lis["memory"].encode()).hexdigest()}}
        assert lis["created_at"] == "2024-03-01T10:00:00" and lis["valid_from"] == "2024-03-01T10:00:00"
        assert m.get(ids["veg"])["metadata"]["source"] == "onboarding"
        assert m.get(ids["agent"])["agent_id"] == "travel-bot" and m.get(ids["run"])["run_id"] == "s1"
        assert m.get(ids["pacific"])["created_at"] == "2024-03-05T16:30:00"       # -08:00 -> UTC
        assert "text_lemmatized" not in m.get(ids["pacific"])["metadata"]
        assert m.get(ids["cello"])["actor_id"] == "Bob"
        upd = m.get(ids["updated"])
        assert upd["updated_at"] == "2024-04-01T12:00:00"
        events = [(e["event"], e["old_memory"], e["new_memory"]) for e in m.history(ids["updated"])]
        assert events == [("ADD", None, "Prefers aisle seats"), ("UPDATE", "Prefers aisle seats", "Prefers window seats")]
        assert [e["event"] for e in m.history(ids["cello"])] == ["ADD"]               # synthesized: no mem0 rows
        assert m.get(ids["nodata"]) is None and m.get(ids["noident"]) is None and m.get(ids["twin"]) is None

        # rebuilt projections: keyword + entity + semantic search find imported memories, scoped
        hit = m.search("where does alice's sister Maya live", user_id="alice", explain=True)["results"][0]
        assert hit["id"] == ids["lisbon"]
        assert m.search("Lisbon", user_id="bob")["results"] == [] or all(
            r["id"] != ids["lisbon"] for r in m.search("Lisbon", user_id="bob")["results"])
        ents = m.sql("select e.name from entity_postings p join entities e on e.id = p.entity_id "
                     "where p.memory_id = $id", {"id": ids["lisbon"]})["name"].to_list()
        assert {"Lisbon", "Maya"} <= set(ents)
        assert m.timeline(user_id="carol").filter(m.timeline(user_id="carol")["id"] == ids["pacific"])["slot"][0] == "works_at"
        assert_store_healthy(m)

        again = m.import_mem0(mem0_store["qdrant"], history=mem0_store["history"])     # idempotent
        assert again["imported"] == 0 and again["skipped_by_reason"]["already in this store (imported before)"] == 7
        m.delete(ids["veg"])
        third = m.import_mem0(mem0_store["qdrant"], history=mem0_store["history"])
        assert m.get(ids["veg"]) is None                                # deleted here stays deleted
        assert third["imported"] == 1 and m.get(ids["twin"])["memory"] == "is vegetarian."   # no longer a twin
        assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 4
        assert_store_healthy(m)


def test_keep_vectors_when_the_dimension_matches_and_reembed_otherwise(mem0_store, tmp_path):
    ids, points = mem0_store["ids"], mem0_store["points"]
    with Memory(str(tmp_path / "kept.duckdb")) as m:
        r = m.import_mem0(mem0_store["qdrant"], keep_vectors=True)
        assert r["vectors"] == "kept" and r["imported"] == 7
        stored = m.sql("select embedding from memories where id = $id", {"id": ids["cello"]})["embedding"][0].to_list()
        assert np.allclose(stored, points[ids["cello"]][1], atol=1e-6)
        assert_store_healthy(m)
    rng = np.random.default_rng(1)
    wide = tmp_path / "wide"
    write_mem0_store(wide, None, [(_id(), _vec(rng, 1536), mem0_payload("Likes jazz", created_at="2024-01-01",
                                                                         user_id="dan"))], dim=1536)
    with Memory(str(tmp_path / "wide.duckdb")) as m:
        r = m.import_mem0(wide, keep_vectors=True)
        assert r["vectors"] == "re-embedded: mem0's vectors are 1536-d, this store's embedder 384-d"
        assert m.search("jazz music", user_id="dan")["results"][0]["memory"] == "Likes jazz"
        assert_store_healthy(m)


def test_cli_import_and_clear_errors(mem0_store, store_path, tmp_path, capsys):
    assert main(["import-mem0", mem0_store["qdrant"], "--history", mem0_store["history"], "--store", store_path]) == 0
    out = capsys.readouterr().out
    assert "read 10 mem0 memories, imported 7, skipped 3" in out and "no text" in out
    assert main(["import-mem0", "--qdrant-path", mem0_store["qdrant"], "--collection", "mem0", "--history",
                 mem0_store["history"], "--store", store_path, "--json"]) == 0       # the spelling
    assert '"imported": 0' in capsys.readouterr().out                               # a re-run imports nothing
    assert main(["import-mem0", "--store", store_path]) == 2
    assert "name mem0's Qdrant folder" in capsys.readouterr().err
    assert main(["import-mem0", str(tmp_path / "missing"), "--store", store_path]) == 1
    assert "no Qdrant folder" in capsys.readouterr().err
    assert main(["import-mem0", mem0_store["qdrant"], "--collection", "nope", "--store", store_path]) == 1
    assert "no collection 'nope'" in capsys.readouterr().err
    with Memory(store_path) as m:
        with pytest.raises(Mem0ImportError, match="no history database"):
            m.import_mem0(mem0_store["qdrant"], history=str(tmp_path / "nope.db"))
        assert_store_healthy(m)
