"""doctor(): each invariant, broken behind the API's back, is reported by name; `repair=True` fixes
the safe ones and says so; the CLI exits non-zero while errors remain."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from memstore import Memory
from memstore.cli import main as cli
from memstore.governance.doctor import CHECKS, assert_store_healthy

HASHING = {"embedder": {"provider": "hashing"}}


@pytest.fixture(scope="module")
def seeded_file(tmp_path_factory):
    """A healthy store file, built once (spaCy loads once); each test works on a copy."""
    path = tmp_path_factory.mktemp("doctor") / "seed.duckdb"
    with Memory(str(path), config=HASHING) as m:
        m.add("Alice lives in Boston and works at Google", user_id="alice", infer=False)
        m.add("Alice plays chess with Bob in Seattle", user_id="alice", infer=False)
        m.add("Carl likes jazz in Paris", user_id="carl", infer=False)
    return path


@pytest.fixture
def store(seeded_file, tmp_path):
    path = tmp_path / "d.duckdb"
    shutil.copyfile(seeded_file, path)
    m = Memory(str(path), config=HASHING)
    yield m
    m.close()


def ids(m: Memory, user: str) -> list[str]:
    return [r["id"] for r in m.get_all(user_id=user)["results"]]


def checks(frame) -> set[str]:
    return set(frame["check"])


def test_a_fresh_store_is_healthy(store):
    frame = store.doctor()
    assert frame.height == 0
    assert frame.columns == ["check", "severity", "table", "row_id", "detail", "repairable", "repaired"]
    assert_store_healthy(store, warnings=True)


def test_every_check_has_a_unique_name_and_known_severity():
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    assert {c.severity for c in CHECKS} <= {"error", "warning"}


def test_orphan_rows_are_found_and_repaired(store):
    con = store.db.con
    con.execute("DELETE FROM memories WHERE user_id = 'carl'")            # postings, terms stay behind
    mid = ids(store, "alice")[0]
    con.execute("INSERT INTO memory_links VALUES (?, 'no-such-memory', 'related', 'u=alice|a=|r=', 'alice', NULL, "
                "NULL, now())",
                [mid])
    con.execute("INSERT INTO entity_postings VALUES ('no-such-entity', ?, 'u=alice|a=|r=', 'alice', NULL, NULL)", [mid])
    frame = store.doctor()
    assert checks(frame) == {"orphan_entity_postings", "orphan_keyword_postings", "orphan_links",
                             "posting_unknown_entity"}
    assert frame.filter(frame["check"] == "orphan_links")["row_id"].to_list() == [f"{mid} -> no-such-memory"]
    with pytest.raises(AssertionError, match="orphan_entity_postings"):
        assert_store_healthy(store)
    fixed = store.doctor(repair=True)
    assert fixed["repaired"].all()
    assert "orphan_entities" in checks(fixed)          # surfaced once carl's postings were gone, fixed too
    assert store.doctor().height == 0
    assert store.db.scalar("SELECT count(*) FROM keyword_postings WHERE user_id = 'carl'") == 0
    assert len(ids(store, "alice")) == 2                                   # nothing healthy was touched


def test_scope_mismatch_is_a_tenant_risk_and_repaired_from_the_memory(store):
    mid = ids(store, "alice")[0]
    store.db.con.execute("UPDATE keyword_postings SET user_id = 'carl', scope_key = 'u=carl|a=|r=' WHERE memory_id = ?",
                         [mid])
    carl = ids(store, "carl")[0]
    store.db.con.execute("UPDATE memories SET scope_key = 'u=mallory|a=|r=' WHERE id = ?", [carl])
    frame = store.doctor()
    assert checks(frame) == {"scope_mismatch", "scope_key_mismatch"}
    assert frame.filter(frame["check"] == "scope_key_mismatch")["row_id"].to_list() == [carl]
    # alice's terms now say carl; carl's postings disagree with the memory's (wrong) key
    assert set(frame.filter(frame["check"] == "scope_mismatch")["row_id"]) == {mid, carl}
    store.doctor(repair=True)
    assert store.doctor().height == 0
    assert store.db.scalar("SELECT DISTINCT user_id FROM keyword_postings WHERE memory_id = ?", [mid]) == "alice"


def test_bad_embeddings_are_reembedded(store):
    mid = ids(store, "carl")[0]
    store.db.con.execute("UPDATE memories SET embedding = list_transform(range(384), x -> 0.0)::FLOAT[384] "
                         "WHERE id = ?",
                         [mid])
    frame = store.doctor()
    assert frame.filter(frame["check"] == "bad_embeddings")["row_id"].to_list() == [mid]
    assert frame.filter(frame["check"] == "bad_embeddings")["detail"].to_list() == ["embedding is all zeros"]
    store.doctor(repair=True)
    stored = np.array(store.db.scalar("SELECT embedding FROM memories WHERE id = ?", [mid]), dtype=np.float32)
    expected = store._rt.embedder.embed(["Carl likes jazz in Paris"])[0]
    assert np.allclose(stored, expected, atol=1e-6)
    assert store.search("jazz", user_id="carl")["results"][0]["id"] == mid


def test_nan_embedding_is_reported(store):
    store.db.con.execute("UPDATE memories SET embedding = list_transform(range(384), x -> 'nan'::FLOAT)::FLOAT[384] "
                         "WHERE user_id = 'carl'")
    frame = store.doctor()
    assert frame.filter(frame["check"] == "bad_embeddings")["detail"].to_list() == ["embedding holds NaN"]


def test_embedding_dimension_must_match_the_embedder(tmp_path):
    m = Memory(str(tmp_path / "dim.duckdb"), config={"embedder": {"provider": "hashing", "dims": 16}})
    assert "embedding_dimension" not in checks(m.doctor())
    m._rt.embedder.dim = 32                        # an embedder that no longer matches the store
    assert "embedding_dimension" in checks(m.doctor())
    m.close()


def test_dangling_supersession_and_doc_len_and_duplicates(store):
    a, b = ids(store, "alice")
    con = store.db.con
    con.execute("UPDATE memories SET superseded_by = 'gone', invalidated_at = now() WHERE id = ?", [a])
    con.execute("UPDATE memories SET doc_len = doc_len + 5 WHERE id = ?", [b])
    con.execute("INSERT INTO entity_postings SELECT * FROM entity_postings WHERE memory_id = ? LIMIT 1", [b])
    frame = store.doctor()
    assert {"dangling_superseded_by", "doc_len_mismatch", "duplicate_postings"} <= checks(frame)
    assert ids(store, "alice") == [b]                       # a is hidden for nothing
    store.doctor(repair=True)
    assert store.doctor().height == 0
    assert sorted(ids(store, "alice")) == sorted([a, b])    # current again, as after a delete


def test_missing_add_history_only_when_history_is_on(tmp_path):
    path = str(tmp_path / "h.duckdb")
    with Memory(path, config={**HASHING, "history": "off"}) as m:
        m.add("Dora paints", user_id="dora", infer=False)
        assert m.doctor().height == 0
    with Memory(path, config=HASHING) as m:
        frame = m.doctor()
        assert checks(frame) == {"missing_add_history"} and not frame["repairable"].any()


def test_duplicate_ids_are_found_and_entities_deduplicated(store):
    mid = ids(store, "carl")[0]
    con = store.db.con
    con.execute("INSERT INTO memories SELECT * FROM memories WHERE id = ?", [mid])
    con.execute("INSERT INTO entities SELECT * FROM entities LIMIT 1")
    frame = store.doctor()
    dup = frame.filter(frame["check"] == "duplicate_ids")
    assert sorted(dup["table"]) == ["entities", "memories"]
    fixed = store.doctor(repair=True)
    fixed = fixed.filter(fixed["check"] == "duplicate_ids")
    assert dict(zip(fixed["table"], fixed["repaired"], strict=True)) == {"entities": True, "memories": False}
    assert store.db.scalar("SELECT count(*) - count(DISTINCT id) FROM entities") == 0


def test_cross_scope_link_is_removed(store):
    a = ids(store, "alice")[0]
    c = ids(store, "carl")[0]
    store.db.con.execute("INSERT INTO memory_links VALUES (?, ?, 'related', 'u=alice|a=|r=', 'alice', NULL, NULL, "
                         "now())",
                         [a, c])
    assert "cross_scope_links" in checks(store.doctor())
    store.doctor(repair=True)
    assert store.db.scalar("SELECT count(*) FROM memory_links") == 0


def test_exports_and_leftover_files(store, tmp_path):
    export = tmp_path / "exp"
    export.mkdir()
    (export / "memories.parquet").write_bytes(b"PAR1 not really")
    (export / "manifest.json").write_text(json.dumps({"files": [
        {"table": "memories", "path": "memories.parquet", "rows": 1, "sha256": "0" * 64},
        {"table": "history", "path": "history.parquet", "rows": 1, "sha256": "0" * 64}]}))
    (export / "memories.parquet.erase-tmp").write_bytes(b"Zyxwvutronix")
    con = store.db.con
    con.execute("INSERT INTO exports VALUES ('e1', ?, 'parquet_export', now())", [str(export)])
    con.execute("INSERT INTO exports VALUES ('e2', ?, 'snapshot', now())", [str(tmp_path / "vanished")])
    frame = store.doctor()
    assert {"export_checksums", "missing_exports", "leftover_files"} <= checks(frame)
    assert frame.filter(frame["check"] == "export_checksums").height == 2
    fixed = store.doctor(repair=True)
    assert not (export / "memories.parquet.erase-tmp").exists()
    assert store.db.scalar("SELECT count(*) FROM exports") == 1
    assert not fixed.filter(fixed["check"] == "export_checksums")["repaired"].any()


@pytest.mark.filterwarnings("ignore:store .* was embedded with")   # the CLI's default embedder; nothing is embedded
def test_cli_doctor_exit_codes(store, capsys):
    path = store.db.path
    store.db.con.execute("DELETE FROM memories WHERE user_id = 'carl'")
    store.close()
    assert cli(["doctor", "--store", path]) == 1
    out = capsys.readouterr()
    assert "orphan_keyword_postings" in out.err and "--repair" in out.err
    assert "orphan_keyword_postings  keyword_postings" in out.out
    assert cli(["doctor", "--repair", "--store", path]) == 0
    capsys.readouterr()
    assert cli(["doctor", "--json", "--store", path]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli(["doctor", "--store", path]) == 0
    assert "healthy" in capsys.readouterr().out
