"""forget(): the scope leaves no row and no byte — in the database file, its WAL, or a Parquet
export — while every other scope stays intact and searchable; the receipt proves it without
naming the person. Markers are checked by scanning raw bytes of every file under the store folder."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import stat
from pathlib import Path

import duckdb
import numpy as np
import pytest

from memstore import Memory
from memstore.cli import main as cli
from memstore.governance.doctor import assert_store_healthy
from memstore.governance.receipt_key import ENV_VAR, key_path, scope_hash

VICTIM = "victim-7Qk2"
BOB = "bob"
# Strings only the victim ever wrote: in memory text, metadata, messages, entity names, history.
MARKERS = ["Zyxwvutronix", "Quorblefish", "Glimmerquasar", "Frobnitzvalley", "Vexhollow", VICTIM]


def scan_tree(root: str | Path, needles: list[str]) -> dict[str, list[str]]:
    """{file: needles found} over every file under root, case-insensitively (keyword terms are
    lower-cased copies of the text)."""
    found: dict[str, list[str]] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            data = Path(path).read_bytes().lower()
            hit = [n for n in needles if n.lower().encode() in data]
            if hit:
                found[os.path.relpath(path, root)] = hit
    return found


def count_bytes(root: Path, blobs: list[bytes]) -> int:
    """Occurrences of any of the byte strings in the files under root (not in exports)."""
    return sum(p.read_bytes().count(b) for p in root.glob("*.duckdb*") if p.is_file() for b in blobs)


def write_export(m: Memory, folder: Path, *, compression: str = "uncompressed") -> Path:
    """An export directory as the exporter writes it: one Parquet file per table, `memories` split
    into one file per user (names carry no identity), manifest.json, registered in `exports`."""
    folder.mkdir(parents=True)
    con = m.db.con
    files = []
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                                        "AND database_name = current_database()").fetchall()]
    for table in sorted(set(tables) - {"exports", "schema_migrations"}):
        parts = ([("part-00000", f"user_id = '{VICTIM}'"), ("part-00001", f"user_id <> '{VICTIM}'")]
                 if table == "memories" else [("all", "TRUE")])
        (folder / table).mkdir()
        for name, where in parts:
            rel = f"{table}/{name}.parquet"
            con.execute(f"COPY (SELECT * FROM \"{table}\" WHERE {where}) TO '{folder / rel}' "
                        f"(FORMAT parquet, COMPRESSION {compression})")
            rows = con.execute(f"SELECT count(*) FROM '{folder / rel}'").fetchone()[0]
            files.append({"table": table, "path": rel, "rows": rows,
                          "sha256": hashlib.sha256((folder / rel).read_bytes()).hexdigest()})
    counts: dict[str, int] = {}
    for f in files:
        counts[f["table"]] = counts.get(f["table"], 0) + f["rows"]
    manifest = {"format": "memstore-parquet-export", "files": files,
                "tables": {t: {"rows": n} for t, n in counts.items()}}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    con.execute("INSERT INTO exports VALUES (?, ?, 'parquet_export', ?)",
                [f"export-{folder.name}", str(folder), dt.datetime(2024, 1, 1)])
    return folder


def seed(m: Memory) -> dict[str, str]:
    """Two users; the victim's data touches every table (extraction, entities, supersession,
    update, delete, metadata, messages); both mention Paris (a shared entity)."""
    m.add("My cat Zyxwvutronix loves Quorblefish. I live in Vexhollow near Paris.", user_id=VICTIM,
          metadata={"pet": "Glimmerquasar"})
    m.add("I moved to Lyon last spring", user_id=VICTIM)                      # supersedes Vexhollow
    m.add("I train for a marathon with Zyxwvutronix", user_id=VICTIM, agent_id="coach")
    m.add([{"role": "user", "content": "Remember that Zyxwvutronix eats Quorblefish on Tuesdays"}],
          user_id=VICTIM, infer=False)
    mems = {r["memory"]: r["id"] for r in m.get_all(user_id=VICTIM, include_superseded=True)["results"]}
    cat = next(i for t, i in mems.items() if "loves" in t)
    m.update(cat, "My cat Zyxwvutronix adores Quorblefish in Frobnitzvalley")
    m.delete(next(i for t, i in mems.items() if "Tuesdays" in t))
    m.add("I live in Paris and I love hiking in the Alps", user_id=BOB)
    m.add("My sister Clara plays the violin", user_id=BOB)
    return mems


@pytest.fixture(scope="module")
def erased(tmp_path_factory):
    """One store, seeded, exported, checkpointed, then the victim forgotten (module-shared: the
    default embedder and spaCy load once)."""
    root = tmp_path_factory.mktemp("erasure") / "store"
    m = Memory(str(root / "memstore.duckdb"))
    seed(m)
    m.search_all("cat", top_k=3)            # builds the persisted HNSW index, which holds vectors too
    m.db.con.execute("CHECKPOINT")
    export = write_export(m, root / "exports" / "e1")
    vectors = [np.asarray(v, np.float32).tobytes() for (v,) in m.db.rows(
        "v", [VICTIM], sql="SELECT embedding FROM memories WHERE user_id = ?")]
    before = {
        "scan": scan_tree(root, MARKERS),
        "vectors": vectors,
        "vector_hits": count_bytes(root, vectors),
        "bob": {r["id"]: r["memory"] for r in m.get_all(user_id=BOB)["results"]},
        "bob_history": m.db.scalar("SELECT count(*) FROM history WHERE user_id = ?", [BOB]),
        "manifest": json.loads((export / "manifest.json").read_text()),
        "entities": {r[0] for r in m.db.rows("e", sql="SELECT norm FROM entities")},
    }
    receipt = m.forget(user_id=VICTIM, actor_id="dpo@example.com")
    yield {"m": m, "root": root, "export": export, "before": before, "receipt": receipt}
    m.close()


def test_markers_are_on_disk_before_forget(erased):
    """Positive control: the scan would see the markers (DB or WAL, and the uncompressed export)."""
    scan = erased["before"]["scan"]
    seen = {n for hits in scan.values() for n in hits}
    assert seen == set(MARKERS)
    assert any(f.startswith("exports") for f in scan)
    assert any(f.startswith("memstore.duckdb") for f in scan)


def test_no_marker_in_any_byte_of_any_file_after_forget(erased):
    assert scan_tree(erased["root"], MARKERS) == {}
    names = [str(p) for p in erased["root"].rglob("*")]
    assert not any(VICTIM.lower() in n.lower() for n in names)


def test_victim_vectors_leave_the_table_and_the_hnsw_index(erased):
    m, before = erased["m"], erased["before"]
    assert before["vector_hits"] >= len(before["vectors"])          # positive control: raw float bytes visible
    assert count_bytes(erased["root"], before["vectors"]) == 0
    assert m.db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = 'memories_embedding_hnsw'") == 1
    hits = m.search_all("my cat Zyxwvutronix loves Quorblefish", top_k=10)["results"]
    assert hits and all(h["user_id"] == BOB for h in hits)


def test_no_row_of_the_scope_is_left_in_any_table(erased):
    m = erased["m"]
    tables = m.db.rows("t", sql="SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()")
    for (table,) in tables:
        n = m.db.scalar(f'SELECT count(*) FROM "{table}" r WHERE contains(lower(CAST(r AS VARCHAR)), ?)',
                        [VICTIM.lower()])
        assert n == 0, table
    assert m.get_all(user_id=VICTIM, include_superseded=True, show_expired=True)["results"] == []


def test_other_user_is_intact_and_searchable(erased):
    m, before = erased["m"], erased["before"]
    assert {r["id"]: r["memory"] for r in m.get_all(user_id=BOB)["results"]} == before["bob"]
    assert m.db.scalar("SELECT count(*) FROM history WHERE user_id = ?", [BOB]) == before["bob_history"]
    top = m.search("what instrument does my sister play?", user_id=BOB)["results"][0]["memory"]
    assert "violin" in top
    assert "paris" in m.search("Paris", user_id=BOB)["results"][0]["memory"].lower()


def test_shared_entity_stays_and_victim_only_entities_go(erased):
    m, before = erased["m"], erased["before"]
    after = {r[0] for r in m.db.rows("e", sql="SELECT norm FROM entities")}
    assert {"zyxwvutronix", "vexhollow"} <= before["entities"]
    assert "paris" in after and "clara" in after
    assert not {"zyxwvutronix", "vexhollow", "quorblefish"} & after


def test_receipt_counts_proves_and_names_no_one(erased):
    r, m = erased["receipt"], erased["m"]
    assert r["verified"] is True and r["method"] == "rewrite"
    removed = r["rows_removed"]
    for table in ("memories", "history", "messages", "extraction_runs", "entity_postings", "keyword_postings",
                  "memory_links", "entities"):
        assert removed[table] > 0, table
    assert removed["memories"] == 4           # cat (updated), Vexhollow (superseded), Lyon, marathon
    v = r["verification"]
    assert v["needles_checked"] >= 6 and v["files_scanned"] >= 1 and v["hits"] == {} and v["scope_rows_left"] == {}
    assert set(r["timings_ms"]) >= {"delete", "exports", "rewrite", "verify"}
    text = json.dumps(r, default=str).lower()
    assert not any(x.lower() in text for x in MARKERS)
    stored = m.erasure_receipts(user_id=VICTIM)
    assert [s["id"] for s in stored] == [r["id"]]
    assert stored[0]["rows_removed"] == removed and stored[0]["actor_id"] == "dpo@example.com"
    assert m.erasure_receipts(user_id=BOB) == []


def test_export_files_rewritten_and_manifest_updated(erased):
    export, before = erased["export"], erased["before"]["manifest"]
    manifest = json.loads((export / "manifest.json").read_text())
    paths = {f["path"] for f in manifest["files"]}
    assert "memories/part-00000.parquet" not in paths            # the victim's own partition: removed
    assert not (export / "memories" / "part-00000.parquet").exists()
    assert "memories/part-00001.parquet" in paths
    old = {f["path"]: f for f in before["files"]}
    for f in manifest["files"]:
        data = (export / f["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f["path"]
        assert duckdb.sql(f"SELECT count(*) FROM '{export / f['path']}'").fetchone()[0] == f["rows"]
    assert old["memories/part-00001.parquet"]["sha256"] == next(
        f["sha256"] for f in manifest["files"] if f["path"] == "memories/part-00001.parquet")   # bob's: untouched
    assert manifest["tables"]["history"]["rows"] < before["tables"]["history"]["rows"]
    actions = {f["action"] for f in erased["receipt"]["files_rewritten"]}
    assert actions == {"removed", "rewritten", "manifest_updated"}
    history_file = export / "history" / "all.parquet"
    bob_rows = duckdb.sql(f"SELECT count(*) FROM '{history_file}' WHERE user_id = 'bob'").fetchone()[0]
    assert bob_rows == erased["m"].db.scalar("SELECT count(*) FROM history WHERE user_id = 'bob'")


def test_store_is_healthy_and_usable_after_forget(erased):
    m = erased["m"]
    assert_store_healthy(m, warnings=True)
    out = m.add("Bob adopted a tortoise named Sheldon", user_id=BOB, infer=False)
    assert m.get(out["results"][0]["id"])["memory"].startswith("Bob adopted")


@pytest.mark.parametrize("key", ["PRIMARY KEY", ""])
def test_deleted_rows_survive_delete_and_checkpoint_in_duckdb(tmp_path, key):
    """The measurement behind the rewrite: DELETE, CHECKPOINT, FORCE CHECKPOINT and VACUUM leave
    the deleted strings in the file, with or without an index (if DuckDB ever zeroes them, this
    test says so)."""
    path = str(tmp_path / "raw.duckdb")
    con = duckdb.connect(path)
    con.execute(f"CREATE TABLE t (id VARCHAR {key}, txt VARCHAR)")
    con.execute("INSERT INTO t SELECT 'k' || i, 'row ' || i FROM range(1000) r(i)")
    con.execute("INSERT INTO t VALUES ('v', 'Zyxwvutronix is a secret')")
    con.execute("CHECKPOINT")
    assert b"Zyxwvutronix" in Path(path).read_bytes()                # visible before (not compressed away)
    con.execute("DELETE FROM t WHERE id = 'v'")
    for stmt in ("CHECKPOINT", "FORCE CHECKPOINT", "VACUUM", "CHECKPOINT"):
        con.execute(stmt)
    con.close()
    assert b"Zyxwvutronix" in Path(path).read_bytes()


def test_without_scrub_the_scan_finds_the_leftover_bytes_then_scrub_removes_them(tmp_path):
    """Negative control: skipping the rewrite leaves bytes, and verification says so."""
    root = tmp_path / "s"
    m = Memory(str(root / "m.duckdb"), config={"embedder": {"provider": "hashing"}})
    m.add("Quorblefish grows in Vexhollow", user_id="carol", infer=False)
    m.add("Dave likes tea", user_id="dave", infer=False)
    m.db.con.execute("CHECKPOINT")
    r = m.forget(user_id="carol", scrub=False)
    assert r["method"] == "skipped" and r["verified"] is False and sum(r["verification"]["hits"].values()) > 0
    assert scan_tree(root, ["Quorblefish"])
    assert "unverified_receipts" in set(m.doctor()["check"])
    m.scrub()
    assert scan_tree(root, ["Quorblefish", "Vexhollow"]) == {}
    assert [r["memory"] for r in m.get_all(user_id="dave")["results"]] == ["Dave likes tea"]
    m.close()


def test_forget_agent_scope_leaves_the_users_other_agents(tmp_path):
    m = Memory(str(tmp_path / "a.duckdb"), config={"embedder": {"provider": "hashing"}})
    m.add("Kept by the planner agent", user_id="erin", agent_id="planner", infer=False)
    m.add("Said to the coach agent Wobblequartz", user_id="erin", agent_id="coach", infer=False)
    m.add("Said directly", user_id="erin", infer=False)
    r = m.forget(agent_id="coach")
    assert r["verified"] and r["rows_removed"]["memories"] == 1 and r["scope_keys"] == ["agent_id"]
    left = sorted(x["memory"] for x in m.get_all(user_id="erin")["results"])
    assert left == ["Kept by the planner agent", "Said directly"]
    assert scan_tree(tmp_path, ["Wobblequartz"]) == {}
    m.close()


def test_forget_of_unknown_scope_is_an_empty_verified_receipt(tmp_path):
    m = Memory(str(tmp_path / "e.duckdb"), config={"embedder": {"provider": "hashing"}})
    r = m.forget(user_id="nobody")
    assert r["verified"] and sum(r["rows_removed"].values()) == 0
    with pytest.raises(Exception, match="no identity"):
        m.forget()
    m.close()


def test_receipt_key_lives_outside_the_database(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    path = str(tmp_path / "k.duckdb")
    m = Memory(path, config={"embedder": {"provider": "hashing"}})
    m.add("Harriet likes plums", user_id="harriet", infer=False)
    r = m.forget(user_id="harriet")
    kp = key_path(path)
    assert kp.is_file() and stat.S_IMODE(kp.stat().st_mode) == 0o600
    key = kp.read_text().strip().encode()
    assert r["scope_hash"] == scope_hash(key, {"user_id": "harriet"})
    assert key not in Path(path).read_bytes()
    # the same scope under another key hashes differently: the database alone cannot be tested
    # against guessed ids
    monkeypatch.setenv(ENV_VAR, "another-secret")
    assert m.erasure_receipts(user_id="harriet") == []
    monkeypatch.delenv(ENV_VAR)
    assert len(m.erasure_receipts(user_id="harriet")) == 1
    m.close()


def test_cli_forget_needs_yes_then_erases(tmp_path, capsys):
    path = str(tmp_path / "c.duckdb")
    with Memory(path) as m:                           # the CLI opens stores with the default embedder
        m.add("Ivan collects Snorklewhistles", user_id="ivan", infer=False)
    assert cli(["forget", "--user", "ivan", "--store", path]) == 2
    assert "--yes" in capsys.readouterr().err
    with Memory(path) as m:
        assert len(m.get_all(user_id="ivan")["results"]) == 1
    assert cli(["forget", "--user", "ivan", "--yes", "--store", path]) == 0
    assert "verification PASSED" in capsys.readouterr().out
    assert cli(["receipts", "--user", "ivan", "--json", "--store", path]) == 0
    assert json.loads(capsys.readouterr().out)[0]["verified"] is True
    assert scan_tree(tmp_path, ["Snorklewhistles"]) == {}


def test_a_second_connection_blocks_the_rewrite_and_the_erasure_stays_pending(tmp_path):
    from memstore.governance.forget_scope import ErasureIncompleteError

    path = str(tmp_path / "two.duckdb")
    a = Memory(path, config={"embedder": {"provider": "hashing"}})
    b = Memory(path, config={"embedder": {"provider": "hashing"}})
    a.add("Jorunn keeps Blorptangles", user_id="jorunn", infer=False)
    b.add("Kai keeps bees", user_id="kai", infer=False)
    with pytest.raises(ErasureIncompleteError, match="close it") as info:
        a.forget(user_id="jorunn")
    assert info.value.receipt["verified"] is False and info.value.receipt["method"] == "rewrite_failed"
    assert a.get_all(user_id="jorunn")["results"] == []                  # the rows are gone already
    assert [r["memory"] for r in b.get_all(user_id="kai")["results"]] == ["Kai keeps bees"]
    report = a.doctor()
    assert set(report["check"]) == {"pending_erasures"} and report["severity"].to_list() == ["error"]
    assert a.erasure_receipts() == []                                    # no receipt until it is finished
    b.close()
    a.scrub()                                                            # finishes the pending erasure
    [receipt] = a.erasure_receipts(user_id="jorunn")
    assert receipt["verified"] is True and receipt["id"] == info.value.receipt["id"]
    assert a.doctor().height == 0
    assert scan_tree(tmp_path, ["Blorptangles"]) == {}
    a.close()


def test_a_broken_export_is_reported_and_the_rest_is_still_erased(tmp_path):
    root = tmp_path / "s"
    m = Memory(str(root / "m.duckdb"), config={"embedder": {"provider": "hashing"}})
    m.add("Lumi hides Crumplehorns", user_id="lumi", infer=False)
    bad = root / "exports" / "bad"
    bad.mkdir(parents=True)
    (bad / "manifest.json").write_text(json.dumps({"files": [{"table": "memories", "path": "m.parquet"}]}))
    (bad / "m.parquet").write_bytes(b"not parquet")
    m.db.con.execute("INSERT INTO exports VALUES ('bad', ?, 'parquet_export', now())", [str(bad)])
    r = m.forget(user_id="lumi")
    assert r["verified"] is False and r["verification"]["export_problems"]
    assert m.get_all(user_id="lumi")["results"] == []
    assert not any(b"Crumplehorns" in p.read_bytes() for p in root.glob("m.duckdb*"))    # the database is clean
    m.close()


def test_async_forget_then_reads_from_pooled_threads_use_the_new_file(tmp_path):
    import asyncio

    from memstore import AsyncMemory

    async def scenario() -> tuple[dict, list, list]:
        async with AsyncMemory(str(tmp_path / "as.duckdb"), config={"embedder": {"provider": "hashing"}}) as am:
            await am.add("Mina grows Snozzleberries", user_id="mina", infer=False)
            await am.add("Noor grows tomatoes", user_id="noor", infer=False)
            await asyncio.gather(*(am.get_all(user_id="noor") for _ in range(4)))   # cursors on pooled threads
            receipt = await am.forget(user_id="mina")
            noor = await asyncio.gather(*(am.get_all(user_id="noor") for _ in range(4)))
            mina = await am.get_all(user_id="mina")
            return receipt, noor, mina["results"]

    receipt, noor, mina = asyncio.run(scenario())
    assert receipt["verified"] and mina == []
    assert all([r["memory"] for r in out["results"]] == ["Noor grows tomatoes"] for out in noor)
    assert scan_tree(tmp_path, ["Snozzleberries"]) == {}


def test_hive_partitioned_export_loses_the_scopes_folder(tmp_path):
    root = tmp_path / "s"
    m = Memory(str(root / "m.duckdb"), config={"embedder": {"provider": "hashing"}})
    m.add("Olek hoards Gribblenuts", user_id="olek-1234", infer=False)
    m.add("Pia hoards stamps", user_id="pia", infer=False)
    export = root / "exports" / "hive"
    (export / "memories").mkdir(parents=True)
    m.db.con.execute(f"COPY (SELECT * EXCLUDE (embedding) FROM memories) TO '{export / 'memories'}' "
                     "(FORMAT parquet, PARTITION_BY (user_id), COMPRESSION uncompressed)")
    files = sorted(p.relative_to(export).as_posix() for p in export.rglob("*.parquet"))
    assert any("user_id=olek-1234" in f for f in files)
    (export / "manifest.json").write_text(json.dumps({"files": [
        {"table": "memories", "path": f, "rows": 1, "sha256": hashlib.sha256((export / f).read_bytes()).hexdigest()}
        for f in files]}))
    m.db.con.execute("INSERT INTO exports VALUES ('hive', ?, 'parquet_export', now())", [str(export)])
    r = m.forget(user_id="olek-1234")
    assert r["verified"] and not (export / "memories" / "user_id=olek-1234").exists()
    assert [f["path"] for f in json.loads((export / "manifest.json").read_text())["files"]] == \
        [f for f in files if "pia" in f]
    assert "olek-1234" not in json.dumps(r, default=str)      # the removed path is masked in the receipt
    assert scan_tree(tmp_path, ["Gribblenuts", "olek-1234"]) == {}
    m.close()
