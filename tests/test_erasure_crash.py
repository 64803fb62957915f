"""Erasure is journaled and resumable: SIGKILL at random moments of forget(), then reopen → the
erasure either never started (the victim's rows intact, no receipt) or is finished (receipt,
verified, 0 marker bytes in any file), other scopes identical, doctor clean. Also: the process
keeps the file lock across the rewrite, and export folders named after the person are renamed."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from memstore import Memory
from memstore.governance.doctor import run_doctor
from memstore.governance.erase_exports import sha256_file

HASHING = {"embedder": {"provider": "hashing"}}
VICTIM = "victim-Ql9x"
MARKERS = ["Zorblaxian", "Quivvertrout", "Plonkhaven", VICTIM]
REPO = str(Path(__file__).resolve().parents[1])


def scan_tree(root: Path, needles: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            data = Path(folder, name).read_bytes().lower()
            hit = [n for n in needles if n.lower().encode() in data]
            if hit:
                found[os.path.relpath(os.path.join(folder, name), root)] = hit
    return found


def others(m: Memory) -> dict[str, list[tuple]]:
    """Every other scope's rows, as plain tuples (ids, text, metadata...)."""
    return {u: sorted((r["id"], r["memory"], json.dumps(r.get("metadata"), sort_keys=True))
                      for r in m.get_all(user_id=u, top_k=10_000, include_superseded=True)["results"])
            for u in ("olga", "piet")}


def build_store(folder: Path) -> Path:
    path = folder / "store" / "m.duckdb"
    with Memory(str(path), config=HASHING) as m:
        for i in range(40):
            m.add(f"Zorblaxian note {i}: Quivvertrout swims in Plonkhaven pond {i}", user_id=VICTIM, infer=False)
            m.add(f"Olga waters plant number {i}", user_id="olga", infer=False)
            m.add(f"Piet repairs bicycle number {i}", user_id="piet", infer=False, metadata={"n": i})
        m.export_parquet(path.parent / "exports" / f"dsar-{VICTIM}", scope={"user_id": VICTIM}, partition_by=None)
        m.export_parquet(path.parent / "exports" / "full", partition_by="user_id")
    return path


def copy_store(src: Path, dst: Path) -> Path:
    """Copy a store folder; the copy's export registry points at the copy's export folders."""
    shutil.copytree(src.parent, dst)
    store = dst / src.name
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE exports SET path = replace(path, ?, ?)", [str(src.parent), str(dst)])
    return store


SCRIPT = textwrap.dedent("""
    import sys
    from memstore import Memory
    m = Memory(sys.argv[1], config={"embedder": {"provider": "hashing"}})
    print("ready", flush=True)
    m.forget(user_id=sys.argv[2])
    print("done", flush=True)
""")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crash")
    path = build_store(folder)
    with Memory(str(path), config=HASHING) as m:
        expected = others(m)
        t = time.perf_counter()
    # how long a forget takes in a subprocess, after "ready" (kill delays are drawn below it)
    work = copy_store(path, folder / "timing")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(work), VICTIM], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": REPO})
    assert proc.stdout.readline().strip() == "ready"
    t = time.perf_counter()
    assert proc.stdout.readline().strip() == "done"
    duration = time.perf_counter() - t
    proc.wait(timeout=60)
    return {"path": path, "expected": expected, "duration": duration}


def test_sigkill_at_random_points_of_forget_then_reopen_finishes_or_never_started(pristine, tmp_path):
    rng = random.Random(20)
    outcomes = []
    for attempt in range(10):
        work = tmp_path / f"run{attempt}"
        store = copy_store(pristine["path"], work)
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(store), VICTIM], stdout=subprocess.PIPE,
                                text=True, env={**os.environ, "PYTHONPATH": REPO})
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, pristine["duration"] * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        journaled = [n for n in os.listdir(work) if ".erasure-" in n]
        with Memory(str(store), config=HASHING) as m:          # the open finishes a pending erasure
            receipts = m.erasure_receipts(user_id=VICTIM)
            victim_rows = len(m.get_all(user_id=VICTIM, top_k=10_000)["results"])
            assert others(m) == pristine["expected"], f"attempt {attempt}: another scope changed"
            assert run_doctor(m._rt).height == 0, f"attempt {attempt}: {run_doctor(m._rt)}"
            if receipts:
                assert receipts[0]["verified"] is True and victim_rows == 0
                outcomes.append("finished" if not journaled else "resumed")
            else:
                assert victim_rows == 40, f"attempt {attempt}: rows gone without a receipt"
                outcomes.append("not started")
                m.forget(user_id=VICTIM)                      # the caller retries: then it is all gone
        assert scan_tree(work, MARKERS) == {}, f"attempt {attempt} ({outcomes[-1]})"
        assert not [n for n in os.listdir(work) if ".erasure-" in n or "rewrite-tmp" in n]
        assert not any(VICTIM in p for p in map(str, work.rglob("*")))
    print("kill outcomes:", outcomes)
    assert "resumed" in outcomes or "finished" in outcomes


def test_a_process_killed_after_the_deletes_leaves_a_pending_erasure_that_doctor_reports(pristine, tmp_path):
    """Deterministic kill point: right after the delete transaction committed (before any rewrite)."""
    work = tmp_path / "w"
    store = copy_store(pristine["path"], work)
    script = textwrap.dedent("""
        import os, sys, signal
        from memstore import Memory
        import memstore.governance.forget_scope as fs
        fs.finish_erasure = lambda db, pending, resumed=True: os.kill(os.getpid(), signal.SIGKILL)
        m = Memory(sys.argv[1], config={"embedder": {"provider": "hashing"}})
        m.forget(user_id=sys.argv[2])
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(store), VICTIM], env={**os.environ, "PYTHONPATH": REPO},
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert scan_tree(work, MARKERS)                              # the bytes are still there ...
    sidecar = [p for p in work.iterdir() if ".erasure-" in p.name]
    assert len(sidecar) == 1 and VICTIM.encode() not in sidecar[0].read_bytes()   # sealed, not in clear
    with duckdb.connect(str(store), read_only=True) as con:      # ... and the journal says so
        [(n, hashed)] = con.execute("SELECT count(*), any_value(scope_hash) FROM pending_erasures").fetchall()
        assert n == 1 and VICTIM not in hashed
        assert con.execute("SELECT count(*) FROM memories WHERE user_id = ?", [VICTIM]).fetchone()[0] == 0
    with Memory(str(store), config={**HASHING, "read_only": True}) as ro:   # cannot finish: reports it
        report = run_doctor(ro._rt)
        assert report.filter(report["check"] == "pending_erasures")["severity"].to_list() == ["error"]
    with Memory(str(store), config=HASHING) as m:
        [receipt] = m.erasure_receipts(user_id=VICTIM)
        assert receipt["verified"] and receipt["rows_removed"]["memories"] == 40
        assert VICTIM not in json.dumps(receipt, default=str)
        assert run_doctor(m._rt).height == 0
    assert scan_tree(work, MARKERS) == {}


def test_after_forget_the_process_still_holds_the_file_lock(tmp_path):
    path = tmp_path / "lock.duckdb"
    m = Memory(str(path), config=HASHING)
    m.add("Zorblaxian secret", user_id=VICTIM, infer=False)
    m.add("Olga waters plants", user_id="olga", infer=False)
    m.forget(user_id=VICTIM)
    probe = "import duckdb, sys\ntry:\n    duckdb.connect(sys.argv[1])\nexcept Exception as e:\n    print('locked', e)\n"
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("locked"), "another process could open the store after forget()"
    m.add("Olga repots a fern", user_id="olga", infer=False)           # and this process can still write
    assert len(m.get_all(user_id="olga")["results"]) == 2
    m.close()


def test_an_export_folder_named_after_the_user_is_renamed_and_the_receipt_does_not_name_them(tmp_path):
    path = tmp_path / "s" / "m.duckdb"
    m = Memory(str(path), config=HASHING)
    m.add("Zorblaxian owns a Quivvertrout", user_id=VICTIM, infer=False)
    m.add("Olga waters plants", user_id="olga", infer=False)
    m.export_parquet(path.parent / "exports" / f"dsar-{VICTIM}", scope={"user_id": VICTIM})
    receipt = m.forget(user_id=VICTIM)
    assert receipt["verified"] is True
    assert VICTIM not in json.dumps(receipt, default=str)
    assert not any(VICTIM in str(p) for p in tmp_path.rglob("*"))
    assert all(VICTIM not in p for (p,) in m.db.rows("x", sql="SELECT path FROM exports"))
    assert any(f["action"] == "renamed" for f in receipt["files_rewritten"])
    assert run_doctor(m._rt).height == 0
    m.close()
    assert scan_tree(tmp_path, MARKERS) == {}


KILL_AT_UNLINK = textwrap.dedent("""
    import os, sys, signal
    nth, seen, real_remove = int(sys.argv[3]), [], os.remove
    def remove(path, *args, **kwargs):      # remove_scrubbing zeroed the file: die before the unlink
        if ".parquet" in os.path.basename(str(path)):
            seen.append(str(path))
            if len(seen) == nth:
                print("killed before unlinking", path, file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        return real_remove(path, *args, **kwargs)
    os.remove = remove
    from memstore import Memory
    m = Memory(sys.argv[1], config={"embedder": {"provider": "hashing"}})
    m.forget(user_id=sys.argv[2])
""")


@pytest.mark.parametrize("nth", [1, 3])
def test_a_kill_between_zeroing_and_unlinking_a_removed_export_file_resumes_verified(pristine, tmp_path, nth):
    """The interleaving that once failed the random-kill test under load: erasure removes the
    victim's partition files of the `full` export (zero the bytes, fsync, unlink, then the manifest
    at the end). Killed after the zeroing and before the unlink, the file stayed listed in the
    manifest with its old sha256 but was no longer Parquet: the resumed erasure could not read it,
    skipped that whole export (the victim's other files there unfiltered) and stored an unverified
    receipt; doctor reported the sha256 mismatch."""
    work = tmp_path / "w"
    store = copy_store(pristine["path"], work)
    proc = subprocess.run([sys.executable, "-c", KILL_AT_UNLINK, str(store), VICTIM, str(nth)],
                          env={**os.environ, "PYTHONPATH": REPO}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    [killed_at] = [line for line in proc.stderr.splitlines() if line.startswith("killed before unlinking")]
    assert f"{os.sep}full{os.sep}" in killed_at
    with Memory(str(store), config=HASHING) as m:             # the open finishes the pending erasure
        [receipt] = m.erasure_receipts(user_id=VICTIM)
        assert receipt["verified"] is True, receipt["verification"]
        assert receipt["verification"]["export_problems"] == []
        assert m.get_all(user_id=VICTIM, top_k=10_000)["results"] == []
        assert others(m) == pristine["expected"]
        assert run_doctor(m._rt).height == 0, run_doctor(m._rt)
        exports = [p for (p,) in m.db.rows("x", sql="SELECT path FROM exports")]
    for folder in map(Path, exports):                         # every listed file is there, as listed
        for entry in json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["files"]:
            assert sha256_file(folder / entry["path"]) == entry["sha256"], entry["path"]
            assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder / entry['path']}')").fetchone()[0] \
                == entry["rows"]
    assert scan_tree(work, MARKERS) == {}
    assert not [p for p in work.rglob("*") if p.name.endswith((".erase-tmp", ".rewrite-tmp")) or ".erasure-" in p.name]


@pytest.mark.parametrize("call", ["remove", "rmdir"])
def test_a_kill_while_removing_a_hive_partition_leaves_no_folder_named_after_the_user(tmp_path, call):
    """A Hive-partitioned export (`memories/user_id=<id>/…`): killed before the partition file's
    unlink, or after it and before its emptied folder is pruned, the resumed erasure must still
    remove the folder (its name is the id)."""
    import hashlib

    store = tmp_path / "s" / "m.duckdb"
    with Memory(str(store), config=HASHING) as m:
        m.add("Zorblaxian hoards Quivvertrout", user_id=VICTIM, infer=False)
        m.add("Olga hoards stamps", user_id="olga", infer=False)
        export = store.parent / "exports" / "hive"
        (export / "memories").mkdir(parents=True)
        m.db.con.execute(f"COPY (SELECT * EXCLUDE (embedding) FROM memories) TO '{export / 'memories'}' "
                         "(FORMAT parquet, PARTITION_BY (user_id), COMPRESSION uncompressed)")
        files = sorted(p.relative_to(export).as_posix() for p in export.rglob("*.parquet"))
        (export / "manifest.json").write_text(json.dumps({"files": [
            {"table": "memories", "path": f, "rows": 1, "sha256": hashlib.sha256((export / f).read_bytes()).hexdigest()}
            for f in files]}))
        m.db.con.execute("INSERT INTO exports VALUES ('hive', ?, 'parquet_export', now())", [str(export)])
    script = textwrap.dedent(f"""
        import os, sys, signal
        real = os.{call}
        def call(path, *args, **kwargs):
            if "user_id=" in str(path):
                print("killed at", path, file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return real(path, *args, **kwargs)
        os.{call} = call
        from memstore import Memory
        Memory(sys.argv[1], config={{"embedder": {{"provider": "hashing"}}}}).forget(user_id=sys.argv[2])
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(store), VICTIM], env={**os.environ, "PYTHONPATH": REPO},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL and "killed at" in proc.stderr, proc.stderr[-2000:]
    with Memory(str(store), config=HASHING) as m:
        [receipt] = m.erasure_receipts(user_id=VICTIM)
        assert receipt["verified"] is True, receipt["verification"]
        assert run_doctor(m._rt).height == 0
    assert not [str(p) for p in tmp_path.rglob("*") if VICTIM in str(p)]
    assert [e["path"] for e in json.loads((export / "manifest.json").read_text())["files"]] == \
        [f for f in files if "olga" in f]
    assert scan_tree(tmp_path, MARKERS) == {}
