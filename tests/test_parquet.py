"""Parquet export (manifest, checksums, partitions, registry) and import into a new store."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import string
import tempfile
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import Memory
from memstore.analysis.frames import TABLE_FRAMES
from memstore.analysis.manifest import refresh_manifest
from memstore.analysis.parquet_export import store_tables
from memstore.core.errors import ExportError, ReadOnlyError, StoreMismatchError
from memstore.core.identity import RESERVED_METADATA_KEYS

HASHING = {"embedder": {"provider": "hashing"}}
# Search equality is checked with the default (local) embedder once it exists; the hashing one stands in.
SEARCH_CONFIG = {} if importlib.util.find_spec("memstore.providers.embed_local") else HASHING
ODD_USERS = ["alice", "NULL", "o'neil/é", "a%2Fb=1"]


def _fill(mem: Memory) -> None:
    mem.add("I'm vegetarian and I live in Boston. My sister Carol lives in Seattle.", user_id="alice")
    mem.add("I love hiking in the Alps", user_id="alice", metadata={"topic": "hobby", "stars": 5})
    mem.add([{"role": "user", "content": "Bob moved to Paris in 2021"}], user_id="bob", infer=False)
    mem.add([{"role": "user", "content": "Bob is allergic to peanuts"}], user_id="bob", infer=False,
            metadata={"topic": "health"})
    mem.add([{"role": "user", "content": "NULL is a real user name"}], user_id="NULL", infer=False)
    mem.add([{"role": "user", "content": "O'Neil likes tea"}], user_id="o'neil/é", infer=False)
    mem.add([{"role": "user", "content": "agent-wide note about tea"}], agent_id="helper", infer=False)


@pytest.fixture(scope="module")
def nlp_runtime(tmp_path_factory):
    """spaCy takes seconds to load: build it once and share it with the stores the property creates."""
    warm = Memory(tmp_path_factory.mktemp("nlp") / "warm.duckdb", config=HASHING)
    nlp = warm._rt.nlp
    warm.close()
    return nlp


@pytest.fixture(scope="module")
def source(tmp_path_factory, nlp_runtime):
    root = tmp_path_factory.mktemp("parquet")
    mem = Memory(root / "source.duckdb", config=SEARCH_CONFIG)
    mem._rt._nlp = nlp_runtime        # the real spaCy pipeline, loaded once per module
    _fill(mem)
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def exported(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("exports") / "full"
    return out, source.export_parquet(out)


def _table_frames(mem: Memory) -> dict[str, pl.DataFrame]:
    """Every exported table of a store, in a stable order (embeddings included)."""
    out = {name: mem.frame(name, embeddings=True) for name in TABLE_FRAMES}
    for table in store_tables(mem.db):
        if table not in TABLE_FRAMES.values():
            out[table] = mem.db.frame("t", sql=f'SELECT * FROM "{table}" ORDER BY ALL')
    # where the rows lie on disk is each store's own (an import writes them sorted by scope)
    out["store_meta"] = out["store_meta"].filter(~pl.col("key").is_in(["cluster_runs", "clustered_rows"]))
    return out


def test_manifest_counts_checksums_and_schema_version(source, exported):
    out, manifest = exported
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == json.loads(json.dumps(manifest, default=str))
    assert manifest["schema_version"] == source.db.scalar("SELECT max(version) FROM schema_migrations")
    assert manifest["store_meta"]["dim"] == str(source.db.dim)
    for table, info in manifest["tables"].items():
        assert info["rows"] == source.db.scalar(f'SELECT count(*) FROM "{table}"'), table
        assert info["rows"] == sum(f["rows"] for f in manifest["files"] if f["table"] == table)
    assert {"memories", "history", "entities", "entity_postings", "keyword_postings", "memory_links", "messages",
            "extraction_runs", "store_meta"} <= set(manifest["tables"])
    assert "exports" not in manifest["tables"] and "schema_migrations" not in manifest["tables"]
    for f in manifest["files"]:
        path = out / f["path"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"]
        meta = pq.read_metadata(path)
        assert meta.num_rows == f["rows"]
        if meta.num_rows:
            assert meta.row_group(0).column(0).compression == "ZSTD"
    assert "api_key" not in manifest["embedder"]


def test_export_is_registered_for_erasure(source, exported):
    out, manifest = exported
    rows = source.sql("SELECT id, path, kind FROM exports WHERE id = $id", {"id": manifest["id"]}).to_dicts()
    assert rows == [{"id": manifest["id"], "path": str(out.resolve()), "kind": "parquet_export"}]


def test_partitions_hold_one_user_each_and_names_reveal_none(exported):
    out, manifest = exported
    mem_files = [f for f in manifest["files"] if f["table"] == "memories"]
    assert len(mem_files) == 5                       # alice, bob, NULL, o'neil/é, and user_id NULL
    seen = []
    for f in mem_files:
        users = pl.read_parquet(out / f["path"])["user_id"].unique().to_list()
        assert len(users) == 1
        seen.append(users[0])
    assert sorted(seen, key=str) == sorted(["alice", "bob", "NULL", "o'neil/é", None], key=str)
    text = (out / "manifest.json").read_text() + " ".join(str(p) for p in out.rglob("*"))
    for user in ("alice", "bob", "o'neil", "NULL"):
        assert user not in text


def test_unpartitioned_and_scoped_export(source, tmp_path):
    manifest = source.export_parquet(tmp_path / "alice", scope={"user_id": "alice"}, partition_by=None)
    assert manifest["scope_keys"] == ["user_id"]
    assert all(f["path"].endswith("/all.parquet") for f in manifest["files"])
    con = duckdb.connect()
    for f in manifest["files"]:
        df = con.execute("SELECT * FROM read_parquet($p)", {"p": str(tmp_path / "alice" / f["path"])}).pl()
        if "user_id" in df.columns:
            assert set(df["user_id"]) <= {"alice"}, f["path"]
    alice_entities = set(source.frame("postings", user_id="alice")["entity_id"])
    exported_entities = set(pl.read_parquet(tmp_path / "alice" / "entities" / "all.parquet")["id"])
    assert exported_entities == alice_entities
    assert manifest["tables"]["memories"]["rows"] == source.frame("memories", user_id="alice").height


def test_export_refuses_a_non_empty_directory_and_leaves_it_alone(source, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    before = source.db.scalar("SELECT count(*) FROM exports")
    with pytest.raises(ExportError, match="not empty"):
        source.export_parquet(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    assert source.db.scalar("SELECT count(*) FROM exports") == before
    with pytest.raises(ExportError, match="partition_by='memory'"):
        source.export_parquet(tmp_path / "new", partition_by="memory")
    assert not (tmp_path / "new").exists()


def test_import_gives_identical_frames_and_search_results(source, exported, tmp_path):
    out, _ = exported
    copy = Memory.import_parquet(out, tmp_path / "copy.duckdb")
    try:
        a, b = _table_frames(source), _table_frames(copy)
        assert a.keys() == b.keys()
        for name in a:
            assert a[name].equals(b[name]), name
        for user, query in [("alice", "where does alice live"), ("alice", "hobbies outdoors"),
                            ("bob", "food allergy"), ("o'neil/é", "tea"), ("NULL", "user name")]:
            left = source.search(query, user_id=user)["results"]
            right = copy.search(query, user_id=user)["results"]
            assert [r["id"] for r in left] == [r["id"] for r in right] and left, (user, query)
            assert [r["score"] for r in left] == pytest.approx([r["score"] for r in right], abs=1e-6)
            assert [r["memory"] for r in left] == [r["memory"] for r in right]
        assert copy.db.scalar("SELECT count(*) FROM exports") == 0
        problems = copy.doctor()
        assert problems.is_empty(), problems
    finally:
        copy.close()


def test_import_writes_the_clustered_tables_sorted_by_scope_and_records_them_as_one_run(tmp_path, nlp_runtime):
    """Where the source's sorted runs ended says nothing about the copy's rows: the copy writes the
    clustered tables in the re-cluster's order and records its own run, ending at each table's last
    row (its first re-cluster pass sorts only what is added later); every other store_meta row comes
    along."""
    from memstore.store.cluster_runs import RUN_KEYS, read_runs, resolve_run, tail_rows
    from memstore.store.recluster import mark_sorted

    src = Memory(tmp_path / "runs.duckdb", config=HASHING)
    try:
        _fill(src)
        for u in ("zed", "amy", "kim"):     # adds by users out of order: the source is not sorted by scope
            src.add(f"{u} keeps bees in the garden", user_id=u, infer=False)
        mark_sorted(src.db)
        source_runs = read_runs(src.db)
        src.export_parquet(tmp_path / "out")
    finally:
        src.close()
    copy = Memory.import_parquet(tmp_path / "out", tmp_path / "copy.duckdb")
    try:
        runs = read_runs(copy.db)
        assert len(runs) == 1 and runs != source_runs
        assert tail_rows(copy.db, runs) == 0
        for table in RUN_KEYS:
            users = [r[0] for r in copy.db.rows("t", sql=f"SELECT user_id FROM {table} ORDER BY rowid")]
            assert users == sorted(users, key=lambda u: (u is None, u or "")), table
            assert resolve_run(copy.db, runs[0])[table] == len(users), table
        assert copy.db.meta("dim") is not None
        assert copy.doctor().is_empty()
    finally:
        copy.close()


def _copy_export(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_altered_or_missing_file_is_refused_before_anything_is_written(exported, tmp_path):
    out, manifest = exported
    bad = _copy_export(out, tmp_path / "bad")
    victim = next(f for f in manifest["files"] if f["table"] == "memories")
    data = bytearray((bad / victim["path"]).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / victim["path"]).write_bytes(bytes(data))
    with pytest.raises(ExportError, match=f"{victim['path']} was altered: sha256"):
        Memory.import_parquet(bad, tmp_path / "x.duckdb")
    assert not (tmp_path / "x.duckdb").exists()
    (bad / victim["path"]).unlink()
    with pytest.raises(ExportError, match=f"{victim['path']} is missing"):
        Memory.import_parquet(bad, tmp_path / "x.duckdb")
    with pytest.raises(ExportError, match="no manifest.json"):
        Memory.import_parquet(tmp_path, tmp_path / "x.duckdb")
    assert not (tmp_path / "x.duckdb").exists()


def test_newer_schema_and_existing_target_are_refused(exported, tmp_path):
    out, _ = exported
    newer = _copy_export(out, tmp_path / "newer")
    manifest = json.loads((newer / "manifest.json").read_text())
    manifest["schema_version"] = 999
    (newer / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ExportError, match="schema version 999"):
        Memory.import_parquet(newer, tmp_path / "x.duckdb")
    existing = tmp_path / "existing.duckdb"
    existing.write_bytes(b"not mine to overwrite")
    with pytest.raises(ExportError, match="already exists"):
        Memory.import_parquet(out, existing)
    assert existing.read_bytes() == b"not mine to overwrite"


def test_import_with_another_embedder_is_refused_and_leaves_no_file(exported, tmp_path):
    out, _ = exported
    with pytest.raises(StoreMismatchError, match="export was built with embedder"):
        Memory.import_parquet(out, tmp_path / "x.duckdb", config={"embedder": {"provider": "hashing", "dims": 64}})
    assert list(tmp_path.iterdir()) == []


def test_refresh_manifest_after_a_file_is_rewritten(exported, tmp_path):
    out, manifest = exported
    copy = _copy_export(out, tmp_path / "rewritten")
    target = next(f for f in manifest["files"] if f["table"] == "messages" and f["rows"] > 0)
    path = copy / target["path"]
    pl.read_parquet(path).head(0).write_parquet(path, compression="zstd")
    with pytest.raises(ExportError, match="was altered"):
        Memory.import_parquet(copy, tmp_path / "x.duckdb")
    fresh = refresh_manifest(copy)
    entry = next(f for f in fresh["files"] if f["path"] == target["path"])
    assert entry["rows"] == 0
    assert fresh["tables"]["messages"]["rows"] == manifest["tables"]["messages"]["rows"] - target["rows"]
    Memory.import_parquet(copy, tmp_path / "x.duckdb").close()


def test_forget_rewrites_the_registered_export_which_still_imports(tmp_path, nlp_runtime):
    with Memory(tmp_path / "s.duckdb", config=HASHING) as mem:
        mem._rt._nlp = nlp_runtime
        mem.add([{"role": "user", "content": "Zelda lives in Hyrule"}], user_id="zelda", infer=False)
        mem.add([{"role": "user", "content": "Bob lives in Paris"}], user_id="bob", infer=False)
        mem.export_parquet(tmp_path / "exp")
        mem.forget(user_id="zelda")
    leftovers = [p for p in (tmp_path / "exp").rglob("*") if p.is_file() and b"Zelda" in p.read_bytes()]
    assert leftovers == []
    with Memory.import_parquet(tmp_path / "exp", tmp_path / "copy.duckdb") as copy:   # checksums still match
        assert copy.sql("SELECT DISTINCT user_id FROM memories")["user_id"].to_list() == ["bob"]
        assert copy.doctor().is_empty()


def test_read_only_store_refuses_to_export(tmp_path):
    path = tmp_path / "s.duckdb"
    Memory(path, config=HASHING).close()
    with Memory(path, config=dict(HASHING, read_only=True)) as ro:
        with pytest.raises(ReadOnlyError, match="registered"):
            ro.export_parquet(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_export_then_import(tmp_path, monkeypatch, capsys, nlp_runtime):
    import memstore.cli.analysis as cli_analysis
    from memstore.cli import main

    store = tmp_path / "cli.duckdb"
    with Memory(store, config=HASHING) as mem:
        mem._rt._nlp = nlp_runtime
        mem.add([{"role": "user", "content": "Dana plays chess"}], user_id="dana", infer=False)
    monkeypatch.setattr(cli_analysis, "open_memory", lambda args, **cfg: Memory(args.store, config={**HASHING, **cfg}))
    assert main(["export", str(tmp_path / "exp"), "--store", str(store), "--user", "dana"]) == 0
    assert "manifest.json" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "exp"), "--store", str(tmp_path / "new.duckdb")]) == 0
    assert "(1 memories)" in capsys.readouterr().out
    with Memory(tmp_path / "new.duckdb", config=HASHING) as copy:
        assert copy.get_all(user_id="dana")["results"][0]["memory"] == "Dana plays chess"


# -- round trip property ---------------------------------------------------------------------------

_words = st.text(alphabet=string.ascii_letters + "éüß'’ -.,!?0123456789", min_size=1, max_size=40).filter(
    lambda t: any(c.isalnum() for c in t))
_meta_values = st.one_of(st.text(max_size=12), st.integers(-10**9, 10**9), st.booleans(), st.none(),
                         st.floats(allow_nan=False, allow_infinity=False, width=32))
_metadata = st.dictionaries(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8)
                            .filter(lambda k: k not in RESERVED_METADATA_KEYS), _meta_values, max_size=3)
_scopes = st.one_of(st.fixed_dictionaries({"user_id": st.sampled_from(ODD_USERS)}),
                    st.fixed_dictionaries({"user_id": st.sampled_from(ODD_USERS), "agent_id": st.just("bot")}),
                    st.fixed_dictionaries({"agent_id": st.just("bot")}))
_batches = st.lists(st.tuples(_scopes, st.lists(_words, min_size=1, max_size=3), _metadata), min_size=1, max_size=4)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=_batches, partition=st.sampled_from(["user_id", None, "scope_key"]))
def test_round_trip_property(nlp_runtime, batches, partition):
    with tempfile.TemporaryDirectory() as d:
        src = Memory(Path(d) / "a.duckdb", config=HASHING)
        src._rt._nlp = nlp_runtime        # the real spaCy pipeline, loaded once
        try:
            for scope, texts, meta in batches:
                src.add([{"role": "user", "content": t} for t in texts], infer=False, metadata=meta, **scope)
            src.export_parquet(Path(d) / "exp", partition_by=partition)
            dst = Memory.import_parquet(Path(d) / "exp", Path(d) / "b.duckdb")
            try:
                a, b = _table_frames(src), _table_frames(dst)
                for name in a:
                    assert a[name].equals(b[name]), name
                assert a["memories"]["metadata"].to_list() == b["memories"]["metadata"].to_list()
            finally:
                dst.close()
        finally:
            src.close()
