"""Rewrite a store's DuckDB file so deleted rows leave no bytes behind.

Measured on DuckDB 1.5 (see bench/erasure.py and tests/test_erasure.py): after `DELETE`, the
deleted strings stay in the file, in tables with or without a PRIMARY KEY. A deleted row only gets
a deletion mark in its row group (vacuum never compacts tables with ART indexes, and others only
when enough rows go), and blocks that do get freed keep their old content. `CHECKPOINT`, `FORCE
CHECKPOINT` and `VACUUM` remove none of it (1M-memory store: 1,719 occurrences of the erased
user's strings left). The WAL holds inserted rows until a checkpoint folds them into the file.

What works: checkpoint and close the store, `COPY FROM DATABASE` into a fresh file (only visible
rows are written; indexes, views, macros and FTS schemas come along), fsync, atomically rename it
over the old path, then zero the old file's bytes through a descriptor still open on it, and scrub
any WAL. The `Database` reconnects afterwards.

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
import os
import time
from typing import Any

import duckdb

from memstore.errors import MemstoreError
from memstore.governance.catalog import sql_string
from memstore.governance.scrub_files import remove_scrubbing, replace_scrubbing
from memstore.store.extensions import load_extension

FLOAT_CODECS = "alp,alprd,chimp,patas"


class RewriteError(MemstoreError):
    """The database file could not be rewritten; the original file is untouched."""


def rewrite_database(db: Any) -> dict[str, Any]:
    """Replace `db`'s file by a compacted copy holding only live rows; returns what was done
    (method, sizes, seconds). An in-memory database has no bytes to scrub: method 'in_memory'."""
    if db.path == ":memory:":
        return {"method": "in_memory", "bytes_before": 0, "bytes_after": 0, "seconds": 0.0}
    path = db.path
    tmp = f"{path}.rewrite-tmp"
    t0 = time.perf_counter()
    with db.write_lock:
        db.con.execute("CHECKPOINT")
        db.close()
        before = os.path.getsize(path)
        try:
            for leftover in (tmp, tmp + ".wal"):
                remove_scrubbing(leftover)
            _copy_database(path, tmp)
            replace_scrubbing(tmp, path)
            # Checkpoint-on-close leaves no WAL; one that survived belongs to the old file and
            # would be replayed onto the new one, so it is scrubbed, never kept.
            remove_scrubbing(path + ".wal")
            remove_scrubbing(tmp + ".wal")
        except Exception as exc:
            with contextlib.suppress(Exception):
                remove_scrubbing(tmp)
            busy = "already attached" in str(exc)
            raise RewriteError(
                f"could not rewrite {path}: {type(exc).__name__}: {exc}",
                hint=("another connection in this process holds the file (a second Memory on the same path?): "
                      "close it, then " if busy else "") +
                     "the rows are deleted but their old bytes may remain in the file; retry with "
                     "`memstore scrub` (Memory.scrub())") from exc
        finally:
            db.reopen()
    return {"method": "rewrite", "bytes_before": before, "bytes_after": os.path.getsize(path),
            "seconds": time.perf_counter() - t0}


def _copy_database(src: str, dst: str) -> None:
    con = duckdb.connect(":memory:")
    try:
        if load_extension(con, "vss"):
            con.execute("SET hnsw_enable_experimental_persistence = true")  # HNSW indexes copy too
        load_extension(con, "fts")
        # Measured (100k memories, FLOAT[384]): DuckDB's float codecs make random unit vectors
        # bigger, not smaller (240 MB vs 154 MB) and the copy ~40% slower; embeddings are stored raw.
        con.execute(f"SET disabled_compression_methods = {sql_string(FLOAT_CODECS)}")
        # Measured on 2 cores (100k-memory store): one thread copies in 6-7 s, two in 8-10 s with
        # ~1.5x the CPU time — the parallel insert of FLOAT[384] rows only adds overhead.
        con.execute("SET threads = 1")
        con.execute(f"ATTACH {sql_string(src)} AS memstore_src (READ_ONLY)")
        con.execute(f"ATTACH {sql_string(dst)} AS memstore_dst")
        con.execute("COPY FROM DATABASE memstore_src TO memstore_dst")
        con.execute("CHECKPOINT memstore_dst")
        con.execute("DETACH memstore_dst")
        con.execute("DETACH memstore_src")
    finally:
        con.close()
