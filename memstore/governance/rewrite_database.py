"""Rewrite a store's DuckDB file so deleted rows leave no bytes behind.

Measured on DuckDB 1.5 (see bench/erasure.py and tests/test_erasure.py): after `DELETE`, the
deleted strings stay in the file, in tables with or without a PRIMARY KEY. A deleted row only gets
a deletion mark in its row group (vacuum never compacts tables with ART indexes, and others only
when enough rows go), and blocks that do get freed keep their old content. `CHECKPOINT`, `FORCE
CHECKPOINT` and `VACUUM` remove none of it (1M-memory store: 1,719 occurrences of the erased
user's strings left). The WAL holds inserted rows until a checkpoint folds them into the file.

What works: `COPY FROM DATABASE` into a fresh file (only visible rows are written; indexes,
views, macros and FTS schemas come along), fsync, atomically rename it over the old path, then zero
the old file's bytes through a descriptor still open on it, and scrub any WAL.

The process keeps DuckDB's file lock across the swap, so no other process can open the store in
between: the copy is made through the live connection (which holds the old file's lock until the
rename), the new file is locked (POSIX `lockf`, the lock DuckDB takes) before it is renamed into
place, and that descriptor stays open while the Database lives (POSIX locks belong to the process
and inode; closing ANY descriptor of the file drops them, which is why the byte scan reads the store
through that same descriptor, never by opening the file again). Before it starts, the rewrite checks
that the disk has room for the copy (StoreFullError says how much is needed).

>>> from memstore.store.database import Database
>>> import tempfile, os
>>> db = Database(os.path.join(tempfile.mkdtemp(), "r.duckdb"), dim=4, embedder="t")
>>> _ = db.con.execute("INSERT INTO store_meta VALUES ('doc-secret', 'Qxyzzyplugh')")
>>> _ = db.con.execute("DELETE FROM store_meta WHERE key = 'doc-secret'")
>>> out = rewrite_database(db)
>>> b"Qxyzzyplugh" in open(db.path, "rb").read(), db.scalar("SELECT value FROM store_meta WHERE key='dim'")
(False, '4')
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import time
from typing import TYPE_CHECKING, Any

from memstore.core.errors import (
    RewriteError,
    StoreFullError,
)
from memstore.governance.scrub_files import _fsync_dir, _zero_fd, fsync_path, remove_scrubbing
from memstore.store.quoting import sql_ident, sql_string

if TYPE_CHECKING:
    from memstore.store.database import Database

FLOAT_CODECS = "alp,alprd,chimp,patas"
COPY_ALIAS = "memstore_dst"      # the copy is attached under this name; DuckDB keeps it in the copy's catalog


SPACE_MARGIN = 1.10          # the copy holds only live rows: at most the file's size (+10% slack)
SPACE_EXTRA = 8 << 20        # plus WAL and metadata headroom


def needed_space(path: str) -> int:
    """Bytes of free space a rewrite of `path` needs (an upper bound: the file's size, +10%, +8 MB)."""
    size = os.path.getsize(path) + (os.path.getsize(path + ".wal") if os.path.exists(path + ".wal") else 0)
    return int(size * SPACE_MARGIN) + SPACE_EXTRA


def check_free_space(path: str, needed: int, what: str) -> None:
    """Raise StoreFullError when the file system of `path` has less than `needed` bytes free."""
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(path)) or ".").free
    if free < needed:
        raise StoreFullError(
            f"{what} needs about {needed:,} bytes free beside {path}; the disk has {free:,}",
            hint="free disk space (or move the store), then call again", needed_bytes=needed, free_bytes=free,
            path=path)


def rewrite_database(db: Database) -> dict[str, Any]:
    """Replace `db`'s file by a compacted copy holding only live rows; returns what was done
    (method, sizes, seconds). An in-memory database has no bytes to scrub: method 'in_memory'."""
    if db.path == ":memory:":
        return {"method": "in_memory", "bytes_before": 0, "bytes_after": 0, "seconds": 0.0}
    path = db.path
    tmp = f"{path}.rewrite-tmp"
    t0 = time.perf_counter()
    with db.write_lock:
        for leftover in (tmp, tmp + ".wal"):
            remove_scrubbing(leftover)
        check_free_space(path, needed_space(path), "rewriting the store")   # before the checkpoint: on a
        db.run("rewrite:checkpoint", sql="CHECKPOINT")        # full disk it would invalidate the database
        before = os.path.getsize(path)
        if db.others_open:
            raise RewriteError(f"could not rewrite {path}: another connection in this process holds the file",
                               hint="a second Memory on the same path? close it, then retry with `memstore scrub` "
                                    "(Memory.scrub()); the rows are deleted but their old bytes may remain")
        guard = old = None
        try:
            _copy_live(db, tmp)
            fsync_path(tmp)
            guard = os.open(tmp, os.O_RDWR)
            fcntl.lockf(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            old = os.open(path, os.O_RDWR)
            os.replace(tmp, path)                # the commit point: from here the store is the copy
        except Exception as exc:
            for fd in (guard, old):
                if fd is not None:
                    os.close(fd)
            with contextlib.suppress(Exception):
                remove_scrubbing(tmp)
                remove_scrubbing(tmp + ".wal")
            if _no_space(exc):
                raise StoreFullError(f"rewriting {path} ran out of disk space: {exc}",
                                     hint="free disk space, then call again (a pending erasure finishes then)",
                                     needed_bytes=needed_space(path), path=path) from exc
            raise RewriteError(f"could not rewrite {path}: {type(exc).__name__}: {exc}",
                               hint="the rows are deleted but their old bytes may remain in the file; retry "
                                    "with `memstore scrub` (Memory.scrub())") from exc
        try:
            _fsync_dir(os.path.dirname(os.path.abspath(path)))

            def scrub_old() -> None:
                # DuckDB has closed the old file: zero it, and scrub a WAL left beside it (it
                # belongs to the old file and would be replayed onto the new one).
                _zero_fd(old)
                remove_scrubbing(path + ".wal")
                remove_scrubbing(tmp + ".wal")

            db.reopen(before_connect=scrub_old, file_guard=guard)
        finally:
            os.close(old)
    return {"method": "rewrite", "bytes_before": before, "bytes_after": os.path.getsize(path),
            "seconds": time.perf_counter() - t0}


def _no_space(exc: BaseException) -> bool:
    text = f"{exc} {exc.__cause__ or ''}"
    return getattr(exc, "errno", None) == errno.ENOSPC or "No space left" in text or "disk is full" in text.lower()


def _copy_live(db: Database, dst: str) -> None:
    """COPY FROM DATABASE through the store's own connection (it keeps the old file's lock)."""
    run = db.run_instance
    name = run("rewrite:database", "SELECT current_database()")[0][0]
    settings = dict(run("rewrite:settings", "SELECT name, value FROM duckdb_settings() WHERE name IN "
                                            "('threads', 'disabled_compression_methods')"))
    if db.vss_loaded:
        run("rewrite:hnsw_persistence", "SET hnsw_enable_experimental_persistence = true")  # HNSW indexes copy too
    # Measured (100k memories, FLOAT[384]): DuckDB's float codecs make random unit vectors
    # bigger, not smaller (240 MB vs 154 MB) and the copy ~40% slower; embeddings are stored raw.
    run("rewrite:codecs", f"SET disabled_compression_methods = {sql_string(FLOAT_CODECS)}")
    # Measured on 2 cores (100k-memory store): one thread copies in 6-7 s, two in 8-10 s with
    # ~1.5x the CPU time — the parallel insert of FLOAT[384] rows only adds overhead.
    run("rewrite:threads", "SET threads = 1")
    try:
        run("rewrite:attach", f"ATTACH {sql_string(dst)} AS {COPY_ALIAS}")
        try:
            run("rewrite:copy", f"COPY FROM DATABASE {sql_ident(name)} TO {COPY_ALIAS}")
            run("rewrite:checkpoint", f"CHECKPOINT {COPY_ALIAS}")
        finally:
            with contextlib.suppress(Exception):
                run("rewrite:detach", f"DETACH {COPY_ALIAS}")
    finally:
        with contextlib.suppress(Exception):
            run("rewrite:threads", f"SET threads = {int(settings.get('threads') or 1)}")
        with contextlib.suppress(Exception):
            value = settings.get("disabled_compression_methods") or ""
            run("rewrite:codecs", f"SET disabled_compression_methods = {sql_string(value)}" if value
                else "RESET disabled_compression_methods")
