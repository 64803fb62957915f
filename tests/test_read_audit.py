"""The audit of reads in the library (memstore/audit/): a real store file, the hashing embedder.

Each read method leaves exactly its row (ids, scores, method, scope); sampling records about the
share asked; queries can be hashed; forget leaves no byte of a user's queries in the store file or
its exports; retention removes old reads; recording never fails or blocks a read."""
from __future__ import annotations

import datetime as dt
import hashlib
import math
from pathlib import Path

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError

HASHING = {"provider": "hashing"}


def _open(path, **audit):
    return Memory(path, config={"embedder": HASHING, "audit": {"reads": "on", **audit}})


@pytest.fixture
def audited(tmp_path):
    m = _open(str(tmp_path / "a.duckdb"))
    m.add("I live in Boston and I keep three beehives", user_id="alice", infer=False)
    m.add("I fly to Zanzibar on Tuesday", user_id="alice", infer=False)
    m.add("I play the oboe", user_id="bob", infer=False)
    yield m
    m.close()


def _reads(m, **where):
    df = m.frame("reads", **where)
    return df.filter(df["method"] != "frame").to_dicts()


def test_off_by_default_records_nothing(tmp_path):
    m = Memory(str(tmp_path / "off.duckdb"), config={"embedder": HASHING})
    m.add("I live in Boston", user_id="alice", infer=False)
    m.search("Boston", user_id="alice")
    assert m.read_log is None
    assert m.sql("SELECT count(*) AS n FROM reads")["n"][0] == 0
    m.close()


def test_search_get_and_get_all_leave_exactly_their_rows(audited):
    m = audited
    found = m.search("when do I fly?", user_id="alice", channels=("semantic", "keyword"))["results"]
    one = m.get(found[0]["id"])
    listed = m.get_all(user_id="alice")["results"]
    rows = _reads(m)
    assert [r["method"] for r in rows] == ["search", "get", "get_all"]
    s, g, a = rows
    assert s["result_ids"] == [r["id"] for r in found]
    assert s["scores"] == pytest.approx([r["score"] for r in found])
    assert s["query"] == "when do I fly?" and not s["query_hashed"]
    assert s["channels"] == ["semantic", "keyword"] and s["n_results"] == len(found)
    assert (s["user_id"], s["agent_id"], s["run_id"]) == ("alice", None, None)
    assert g["result_ids"] == [one["id"]] and g["user_id"] == "alice"    # scope of the memory read
    assert a["result_ids"] == [r["id"] for r in listed] and a["scores"] is None
    assert all(r["token_name"] is None and r["door"] == "library" and r["ms"] >= 0 for r in rows)


def test_analyst_reads_are_recorded_as_such(audited):
    m = audited
    m.frame("memories", user_id="bob")
    m.sql("SELECT count(*) FROM memories")
    ex = m.explain_search("beehives", user_id="alice")
    everyone = m.search_all("oboe", top_k=2)
    df = m.frame("reads")
    rows = {r["method"]: r for r in df.to_dicts()}
    assert rows["frame"]["query"] == "memories" and rows["frame"]["user_id"] == "bob"
    assert rows["frame"]["n_results"] == 1 and len(rows["frame"]["result_ids"]) == 1
    assert rows["sql"]["query"] == "SELECT count(*) FROM memories" and rows["sql"]["user_id"] is None
    assert rows["explain_search"]["result_ids"] == ex["id"].to_list()
    assert rows["search_all"]["result_ids"] == [r["id"] for r in everyone["results"]]
    assert rows["search_all"]["user_id"] is None and rows["search_all"]["query"] == "oboe"


def test_queries_can_be_stored_as_their_hash(tmp_path):
    m = _open(str(tmp_path / "h.duckdb"), reads_query="hash")
    m.add("I fly to Zanzibar on Tuesday", user_id="alice", infer=False)
    m.search("Zanzibar flight", user_id="alice")
    row = _reads(m)[0]
    assert row["query_hashed"] and row["query"] == hashlib.sha256(b"Zanzibar flight").hexdigest()
    m.close()
    assert b"Zanzibar flight" not in _file_bytes(tmp_path / "h.duckdb")


def test_sampling_records_about_the_share_asked(tmp_path):
    """n reads at p = 0.1: the count is Binomial(n, p); 5 standard deviations either side fail an
    honest sampler with probability < 1e-6 (seeded: the same draws every run)."""
    m = _open(str(tmp_path / "s.duckdb"), sample=0.1, seed=7)
    mid = m.add("I play the oboe", user_id="bob", infer=False)["results"][0]["id"]
    n, p = 2000, 0.1
    for _ in range(n):
        m.get(mid)
    skipped = m.read_log.stats["sampled_out"]
    m.read_log.flush()
    got = m.sql("SELECT count(*) AS n FROM reads WHERE method = 'get'")["n"][0]
    sd = math.sqrt(n * p * (1 - p))
    assert abs(got - n * p) < 5 * sd, got
    assert skipped + got == n
    m.close()


def test_a_failed_write_is_counted_and_never_fails_a_read(audited):
    m = audited
    m.db.faults.add("write:reads")          # every write of the reads table fails from now on
    for _ in range(3):
        assert m.search("oboe", user_id="bob")["results"]
        assert m.read_log.flush() == 0
    assert m.read_log.stats["flush_errors"] == 3 and m.read_log.stats["lost"] >= 1
    m.db.faults.discard("write:reads")
    m.search("oboe", user_id="bob")
    assert len(_reads(m, user_id="bob")) >= 1


def test_the_buffer_is_bounded(tmp_path):
    m = _open(str(tmp_path / "b.duckdb"), buffer_rows=5, flush_s=3600)
    mid = m.add("I play the oboe", user_id="bob", infer=False)["results"][0]["id"]
    m.read_log.hand_over()          # no thread writes meanwhile (it would at half the buffer)
    for _ in range(12):
        m.get(mid)
    assert m.read_log.pending == 5 and m.read_log.stats["dropped"] == 7
    m.close()


def test_a_read_only_open_reads_and_records_nothing(tmp_path):
    path = str(tmp_path / "r.duckdb")
    _open(path).close()
    m = Memory(path, config={"embedder": HASHING, "read_only": True, "audit": {"reads": "on"}})
    assert m.read_log is None and m.search("x", user_id="a")["results"] == []
    m.close()


def test_bad_audit_config_names_the_key():
    with pytest.raises(ConfigError, match="audit.sample"):
        Memory(":memory:", config={"embedder": HASHING, "audit": {"reads": "on", "sample": 2}})
    with pytest.raises(ConfigError, match="audit.reads_query"):
        Memory(":memory:", config={"embedder": HASHING, "audit": {"reads_query": "md5"}})


def _file_bytes(path: Path) -> bytes:
    out = b""
    for p in (Path(path), Path(str(path) + ".wal")):
        if p.exists():
            out += p.read_bytes()
    return out


def _tree_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file())


def test_forget_leaves_no_byte_of_alices_queries_in_the_file_or_exports(tmp_path, audited):
    m = audited
    m.search("Quixotic zeppelin itinerary", user_id="alice")
    m.search("Xylophone rehearsal schedule", user_id="bob")
    m.get_all(user_id="alice")
    m.export_parquet(tmp_path / "export", include_reads=True)
    m.read_log.flush()
    m.db.run("checkpoint", sql="CHECKPOINT")
    assert b"Quixotic zeppelin" in _file_bytes(Path(m.path)) + _tree_bytes(tmp_path / "export")
    receipt = m.forget(user_id="alice")
    assert receipt["verified"] and receipt["rows_removed"]["reads"] >= 2
    everything = _file_bytes(Path(m.path)) + _tree_bytes(tmp_path / "export")
    for needle in (b"Quixotic", b"zeppelin itinerary", b"Zanzibar"):
        assert needle not in everything
    assert b"Xylophone rehearsal" in _tree_bytes(tmp_path / "export")      # bob's reads stay
    assert [r["query"] for r in _reads(m, user_id="bob") if r["method"] == "search"] == ["Xylophone rehearsal schedule"]


def test_reads_held_in_memory_are_erased_too(tmp_path):
    m = _open(str(tmp_path / "f.duckdb"), flush_s=3600)
    m.add("I fly to Zanzibar on Tuesday", user_id="alice", infer=False)
    m.search("Quixotic zeppelin itinerary", user_id="alice")
    assert m.read_log.pending == 1
    m.forget(user_id="alice")
    m.close()
    assert b"Quixotic" not in _file_bytes(tmp_path / "f.duckdb")


def test_exports_include_reads_only_when_asked(audited, tmp_path):
    m = audited
    m.search("oboe", user_id="bob")
    plain = m.export_parquet(tmp_path / "plain")
    asked = m.export_parquet(tmp_path / "asked", include_reads=True)
    assert "reads" not in plain["tables"]
    assert asked["tables"]["reads"]["rows"] >= 1


def test_retention_removes_old_reads(audited):
    m = audited
    m.search("oboe", user_id="bob")
    m.search("beehives", user_id="alice")
    m.read_log.flush()
    later = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(days=40)
    assert m.apply_retention(now=later)["reads"] == 0             # no policy, no audit.retain_days: kept
    m.set_retention("reads", 30)
    m.set_retention("reads", None, user_id="bob")                 # bob's reads are kept
    assert m.apply_retention(now=later, dry_run=True)["reads"] >= 1
    out = m.apply_retention(now=later)
    assert out["reads"] >= 1
    left = m.sql("SELECT DISTINCT user_id FROM reads WHERE method = 'search'")["user_id"].to_list()
    assert left == ["bob"]


def test_audit_retain_days_is_the_default_retention(tmp_path):
    m = _open(str(tmp_path / "d.duckdb"), retain_days=7)
    m.add("I play the oboe", user_id="bob", infer=False)
    m.search("oboe", user_id="bob")
    m.read_log.flush()
    soon = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(days=3)
    later = soon + dt.timedelta(days=5)
    assert m.apply_retention(now=soon)["reads"] == 0
    assert m.apply_retention(now=later)["reads"] >= 1
    m.close()


def test_cli_reads_lists_what_was_shown_newest_first(audited, capsys):
    from memstore.cli import main

    m = audited
    m.search("beehives", user_id="alice")
    m.search("Zanzibar", user_id="alice")
    m.search("oboe", user_id="bob")
    path = m.path
    m.close()
    assert main(["reads", "--store", path, "--user", "alice", "--since", "7d", "--format", "json"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    import json

    rows = [json.loads(ln) for ln in lines]
    assert [r["query"] for r in rows if r["method"] == "search"] == ["Zanzibar", "beehives"]
    assert all(r["user_id"] == "alice" for r in rows)
    assert main(["reads", "--store", path, "--since", "soon"]) == 1


def test_writing_reads_keeps_the_scope_cache_and_search_snapshots(tmp_path):
    """The read log's writes run beside searches (its own thread): they must not look like a write
    behind the cache's back, which would drop every scope's copy (a search then reads the store)."""
    import threading

    m = _open(str(tmp_path / "c.duckdb"), flush_s=0.01)
    for i in range(8):
        m.add(f"I keep {i} red kites", user_id=f"u{i}", infer=False)
    cache = m.db.scope_cache
    for i in range(8):
        m.search("kites", user_id=f"u{i}")
    before = dict(cache.stats)
    stop = threading.Event()

    def keep_flushing():
        while not stop.is_set():
            m.read_log.flush()

    t = threading.Thread(target=keep_flushing)
    t.start()
    for k in range(200):
        m.search("kites", user_id=f"u{k % 8}")
    stop.set()
    t.join()
    assert m.read_log.stats["batches"] > 5
    assert cache.stats.get("file_changes", 0) == before.get("file_changes", 0)
    assert cache.stats.get("invalidations", 0) == before.get("invalidations", 0)
    assert cache.stats.get("misses", 0) == before.get("misses", 0)
    m.close()


def test_forget_erases_analyst_queries_that_name_the_scope(audited):
    m = audited
    m.sql("SELECT count(*) FROM memories WHERE user_id = 'alice'")
    m.sql("SELECT count(*) FROM memories WHERE user_id = 'bob'")
    m.read_log.flush()
    receipt = m.forget(user_id="alice")
    assert receipt["verified"]
    queries = m.sql("SELECT query FROM reads WHERE method = 'sql'")["query"].to_list()
    assert not [q for q in queries if "alice" in q] and any("'bob'" in q for q in queries)
    m.close()
    assert b"user_id = 'alice'" not in _file_bytes(Path(m.path))
