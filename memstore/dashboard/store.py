"""Opening the store for the dashboard: which file, what to do when another process holds it.

DuckDB lets one process write a database file; a second process that opens it gets
`IOException: Could not set lock on file …`. The dashboard turns that into `StoreLockedError` (with
the holder DuckDB names) and can open a *snapshot*: a copy of the file (and its WAL) in a temporary
folder, opened read-only, so a person can look at a store while an ingest is writing it.

>>> choose_store_path("", env={}) == str(DEFAULT_DEMO_STORE)
True
>>> choose_store_path("", env={"MEMSTORE_PATH": "runs/a.duckdb"})
'runs/a.duckdb'
>>> choose_store_path(" other.duckdb ", env={"MEMSTORE_PATH": "runs/a.duckdb"})
'other.duckdb'
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb

from memstore.dashboard.demo_store import DEFAULT_DEMO_STORE
from memstore.errors import MemstoreError


class StoreLockedError(MemstoreError):
    """Another process holds the store's write lock (DuckDB allows one writing process)."""


@dataclass
class OpenStore:
    """A Memory the dashboard works on, and where it came from."""

    memory: object            # memstore.Memory (untyped here to keep imports light)
    path: str                 # the store the person asked for
    snapshot_path: str | None = None
    snapshot_taken: dt.datetime | None = None

    @property
    def read_only(self) -> bool:
        return self.snapshot_path is not None


def choose_store_path(typed: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store to open: what the person typed, else $MEMSTORE_PATH, else the demo store."""
    env = os.environ if env is None else env
    typed = (typed or "").strip()
    return typed or env.get("MEMSTORE_PATH") or str(DEFAULT_DEMO_STORE)


def is_lock_error(exc: BaseException) -> bool:
    """True for DuckDB's 'Could not set lock on file' (another process has the file open)."""
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def open_memory(path: str) -> OpenStore:
    """Open `path` for reading and writing; StoreLockedError when another process holds it."""
    from memstore import Memory

    try:
        return OpenStore(Memory(path), path)
    except duckdb.IOException as exc:
        if is_lock_error(exc):
            holder = str(exc).split("Conflicting lock is held in", 1)[-1].split(". See", 1)[0].strip()
            raise StoreLockedError(
                f"{path} is open for writing in another process ({holder or 'unknown'})",
                hint="wait until it finishes, or open a read-only snapshot copy to look at it now",
                path=path) from exc
        raise


def open_snapshot(path: str, directory: str | None = None) -> OpenStore:
    """Copy `path` (and its .wal) into a temporary folder and open the copy read-only.

    The copy is taken without the lock, so it may miss the writer's latest uncommitted work; DuckDB
    replays the copied WAL, so what was committed when the copy was taken is there.
    """
    from memstore import Memory

    src = Path(path)
    if not src.exists():
        raise FileNotFoundError(f"no store at {path}")
    folder = Path(directory or tempfile.mkdtemp(prefix="memstore-snapshot-"))
    target = folder / src.name
    shutil.copyfile(src, target)
    wal = Path(str(src) + ".wal")
    if wal.exists():
        shutil.copyfile(wal, str(target) + ".wal")
    taken = dt.datetime.now().replace(microsecond=0)
    memory = Memory(str(target), config={"read_only": True})
    return OpenStore(memory, path, snapshot_path=str(target), snapshot_taken=taken)
