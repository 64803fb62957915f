"""A full disk: forget() checks free space first and leaves the erasure journaled; a copy cut short
by ENOSPC never crashes the byte scan; DuckDB's "database has been invalidated" becomes a typed
StoreFullError and the store reopens on the next call once space is back, keeping what was
committed. Runs on a small tmpfs that the test mounts (needs root; skipped with the reason otherwise)."""
from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from memstore import Memory
from memstore.core.errors import StoreFullError
from memstore.governance.doctor import run_doctor

HASHING = {"embedder": {"provider": "hashing"}}
MARKERS = ["Brontowhistle", "Kazoomerang", "victim-Fz8"]


@pytest.fixture
def small_disk(tmp_path):
    """A 24 MB tmpfs mounted under tmp_path, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the disk-full tests run on a 24 MB tmpfs)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system of `folder` up to `leave` free bytes; returns the filler file."""
    filler = folder / f"filler-{uuid.uuid4().hex[:6]}"
    with open(filler, "wb") as fh:
        try:
            while True:
                free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
                if free <= leave:
                    break
                fh.write(b"\0" * min(1 << 20, max(4096, free - leave)))
                fh.flush()
        except OSError:
            pass
    return filler


def scan(root: Path) -> dict[str, list[str]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.name.startswith("filler"):
            data = p.read_bytes().lower()
            hit = [n for n in MARKERS if n.lower().encode() in data]
            if hit:
                out[p.name] = hit
    return out


def seeded(path: Path) -> Memory:
    m = Memory(str(path), config=HASHING)
    for i in range(30):
        m.add(f"Brontowhistle plays the Kazoomerang, take {i}", user_id="victim-Fz8", infer=False)
        m.add(f"Olga waters plant {i}", user_id="olga", infer=False)
    m.db.con.execute("CHECKPOINT")
    return m


def test_forget_on_a_full_disk_says_how_much_space_and_finishes_when_space_is_back(small_disk):
    path = small_disk / "m.duckdb"
    m = seeded(path)
    filler = fill(small_disk, leave=256 << 10)
    with pytest.raises(StoreFullError, match="needs about") as info:
        m.forget(user_id="victim-Fz8")
    assert info.value.fields["needed_bytes"] > info.value.fields["free_bytes"]
    assert m.get_all(user_id="victim-Fz8")["results"] == []          # the rows are gone ...
    assert m.erasure_receipts() == []                                 # ... the erasure is pending
    assert "pending_erasures" in set(run_doctor(m._rt)["check"])
    assert [r["memory"] for r in m.get_all(user_id="olga", top_k=100)["results"]][-1] == "Olga waters plant 0"
    m.close()
    filler.unlink()
    with Memory(str(path), config=HASHING) as again:                  # the open finishes it
        [receipt] = again.erasure_receipts(user_id="victim-Fz8")
        assert receipt["verified"] is True
        assert run_doctor(again._rt).height == 0
        assert len(again.get_all(user_id="olga", top_k=100)["results"]) == 30
    assert scan(small_disk) == {}


def test_a_copy_cut_short_by_enospc_is_scanned_without_a_crash_and_stays_pending(small_disk, monkeypatch):
    """The free-space check is bypassed so the copy itself hits ENOSPC (as when another process
    fills the disk meanwhile): no SIGBUS from the scan, no temporary file left, erasure pending."""
    import memstore.governance.rewrite_database as rw

    path = small_disk / "m.duckdb"
    m = seeded(path)
    size = path.stat().st_size
    filler = fill(small_disk, leave=size // 4)
    monkeypatch.setattr(rw, "needed_space", lambda p: 0)
    with pytest.raises(StoreFullError):
        m.forget(user_id="victim-Fz8")
    assert not list(small_disk.glob("*.rewrite-tmp*"))
    assert m.erasure_receipts() == []
    filler.unlink()
    monkeypatch.undo()
    out = m.doctor(repair=True)                                      # finishes it
    assert out.filter(out["check"] == "pending_erasures")["repaired"].to_list() == [True]
    assert m.erasure_receipts(user_id="victim-Fz8")[0]["verified"] is True
    m.close()
    assert scan(small_disk) == {}


def test_an_invalidated_database_is_a_typed_error_and_reopens_once_space_is_back(small_disk):
    path = small_disk / "m.duckdb"
    m = Memory(str(path), config=HASHING)
    m.add("Olga waters the fern", user_id="olga", infer=False)
    m.db.con.execute("CHECKPOINT")
    filler = fill(small_disk, leave=0)
    errors = []
    for i in range(200):
        try:
            m.add(f"Olga note {i} " + "padding " * 200, user_id="olga", infer=False)
            m.db.con.execute("CHECKPOINT")
        except StoreFullError as exc:
            errors.append(exc)
            if "invalidated" in str(exc):
                break
    assert errors, "the disk never filled"
    assert "invalidated" in str(errors[-1])                          # DuckDB's FATAL, typed
    assert all("free" in str(e) and "bytes" in str(e) for e in errors)
    with pytest.raises(StoreFullError):                              # still full: typed, never raw FATAL
        for _ in range(3):
            m.add("Olga tries again " + "x" * 4000, user_id="olga", infer=False)
            m.db.con.execute("CHECKPOINT")
    filler.unlink()
    texts = [r["memory"] for r in m.get_all(user_id="olga", top_k=1000)["results"]]   # reopened
    assert "Olga waters the fern" in texts
    m.add("Olga is back", user_id="olga", infer=False)
    assert run_doctor(m._rt).filter(lambda_err()).height == 0
    m.close()


def lambda_err():
    import polars as pl

    return pl.col("severity") == "error"
