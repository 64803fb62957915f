"""Publish a shard's store into the lake: the changes since the last publish, in ONE lake transaction.

How a publish finds the changes: every lake row carries `_key` (its id) and `_hash` (md5 of the
row). Inside the lake transaction the publisher reads the shard's (_key, _hash) pairs from the
lake (the `shard` partition only), hands them to the store, and the store answers, from one read
snapshot, with the rows whose (_key, _hash) the lake lacks (new or changed) and the lake keys it
no longer has (deleted, changed, erased). The lake then deletes those keys and inserts those
rows, and appends a row to `_publishes` (the watermark: when, what changed, the store's row counts),
all in the same transaction. So a publish is idempotent (a second one finds nothing to do), and a
killed one leaves no snapshot behind: the next publish finds the same changes and sends them.

>>> # from memstore import Memory
>>> # report = publish(Memory("shard1.duckdb").db, "postgres:dbname=lake host=...", data_path="/data/lake")
>>> # report.inserted["memories"], report.deleted["memories"]
"""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.errors import LakeError
from memstore.core.ids import new_id
from memstore.core.timeutil import utcnow
from memstore.governance import downstream
from memstore.governance.catalog import quote_ident
from memstore.lake import tables as T
from memstore.lake.erasure import scrub_text_stats
from memstore.lake.session import LAKE, LakeSession, quote
from memstore.store.database import registered

if TYPE_CHECKING:
    from memstore.store.database import Database


@dataclass
class PublishReport:
    """What one publish sent. `snapshot` is the lake snapshot it committed (None: nothing changed)."""

    shard: str
    publish_id: str
    inserted: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    erasures: dict[str, Any] = field(default_factory=dict)
    snapshot: int | None = None
    seconds: float = 0.0
    attempts: int = 1

    @property
    def rows(self) -> int:
        return sum(self.inserted.values()) + sum(self.deleted.values())

    def to_dict(self) -> dict[str, Any]:
        return {"shard": self.shard, "publish_id": self.publish_id, "inserted": self.inserted,
                "deleted": self.deleted, "totals": self.totals, "snapshot": self.snapshot,
                "seconds": round(self.seconds, 3), "attempts": self.attempts, "erasures": self.erasures}


def shard_name(db: Database, shard: str | None = None) -> str:
    """The shard's name in the lake: given, else the one it published under before, else the
    store file's name without its extension."""
    if shard:
        return shard
    known = db.meta("lake.shard")
    if known:
        return known
    return os.path.splitext(os.path.basename(db.path))[0] or "store"


def publish(db: Database, lake: str, *, data_path: str | os.PathLike | None = None, shard: str | None = None,
            tables: tuple[str, ...] | None = None, embeddings: bool = False, retries: int = 5,
            compact: bool = False, fault: str | None = None) -> PublishReport:
    """Publish `db`'s changes since its last publish into `lake` (see module doc).

    `tables`: which store tables (default memories, history, entities, postings, links, extraction
    runs; add "messages" for the raw conversation). `embeddings`: also the memories' vectors (as
    FLOAT[]). A commit conflict with another shard's publish is retried `retries` times.
    `compact`: afterwards merge the small files publishes leave (`ducklake_merge_adjacent_files`),
    expire snapshots older than a week and delete the files no snapshot needs.
    `fault="before_commit"` stops inside the transaction (tests of a killed publish)."""
    from memstore.governance.forget_scope import receipt_key  # the key that seals journaled erasures

    shard = shard_name(db, shard)
    wanted = tuple(tables or T.DEFAULT_TABLES)
    unknown = [t for t in wanted if t not in T.KEYS]
    if unknown:
        raise LakeError(f"cannot publish table(s) {unknown}", hint=f"publishable tables: {', '.join(T.KEYS)}")
    t0 = time.perf_counter()
    with LakeSession(lake, data_path=data_path, maintenance=True) as s:
        _retrying(lambda: ensure_lake(s, db, wanted, embeddings=embeddings), retries)
        _remember(db, shard, {"lake": lake, "shard": shard})
        erasures = downstream.finish(db, receipt_key(db.path), target="lake")   # journaled forgets first
        report, attempt = _retrying(lambda: _publish_once(s, db, shard, wanted, embeddings, fault), retries)
        if compact:
            compact_lake(s)
        if report.rows or compact:
            scrub_text_stats(s)        # no text min/max in the catalog (see memstore/lake/erasure.py)
        report.erasures, report.attempts, report.seconds = erasures, attempt, time.perf_counter() - t0
        return report


def compact_lake(s: LakeSession) -> None:
    """Merge small data files, expire snapshots older than 7 days, delete unreferenced files."""
    s.rows("compact:merge", sql=f"SELECT count(*) FROM ducklake_merge_adjacent_files('{LAKE}')")
    s.rows("compact:expire", sql=f"SELECT count(*) FROM ducklake_expire_snapshots('{LAKE}', "
                                 "older_than => now() - INTERVAL 7 DAY)")
    s.rows("compact:cleanup", sql=f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', "
                                  "older_than => now() - INTERVAL 7 DAY)")


def _remember(db: Database, shard: str, settings: dict[str, Any]) -> None:
    """store_meta: the shard name, and the lake as a downstream copy forget() must reach."""
    if db.read_only:
        return
    if db.meta("lake.shard") != shard:
        db.run("queries/set_store_meta", {"key": "lake.shard", "value": shard})   # in no cache: see downstream.py
    current = downstream.targets(db).get("lake")
    if current != settings:
        downstream.set_target(db, "lake", settings)


def _retrying(step, retries: int):
    """(step(), attempts): a lake commit that conflicted with another shard's is tried again."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return step(), attempt
        except LakeError as exc:
            if attempt > retries or not _is_conflict(exc):
                raise
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))


def _is_conflict(exc: LakeError) -> bool:
    """A commit another shard's concurrent commit made fail (DuckLake says "Failed to commit DuckLake
    transaction" and, in the detail, the conflict): safe to run the whole publish again."""
    text = (str(exc) + " " + str(exc.fields.get("detail", ""))).lower()
    return any(s in text for s in ("conflict", "could not serialize", "retry", "failed to commit ducklake",
                                   "duplicate key value"))


def _publish_once(s: LakeSession, db: Database, shard: str, wanted: tuple[str, ...], embeddings: bool,
                  fault: str | None) -> PublishReport:
    report = PublishReport(shard=shard, publish_id=new_id())
    with s.atomic("publish"):
        changes: dict[str, tuple[pa.Table, pa.Table]] = {}
        lake_keys = {t: s.arrow(f"keys:{t}", [shard], sql=f"SELECT _key, _hash FROM {LAKE}.{quote_ident(t)} "
                                                          "WHERE shard = ?") for t in wanted}
        with db.snapshot("lake:publish"):                  # the store as of one moment
            for t in wanted:
                changes[t] = _store_changes(db, t, lake_keys[t], embeddings)
                report.totals[t] = int(db.scalar(f"SELECT count(*) FROM {quote_ident(t)}"))
        for t, (rows, gone) in changes.items():
            report.deleted[t] = gone.num_rows
            report.inserted[t] = rows.num_rows
            if gone.num_rows:
                with s.registered("_gone", gone):
                    s.run(f"delete:{t}", [shard], sql=f"DELETE FROM {LAKE}.{quote_ident(t)} WHERE shard = ? "
                                                      "AND _key IN (SELECT _key FROM _gone)")
            if rows.num_rows:
                cols = ", ".join(quote_ident(c) for c in rows.column_names)
                with s.registered("_rows", rows):
                    s.run(f"insert:{t}", [shard], sql=f"INSERT INTO {LAKE}.{quote_ident(t)} (shard, {cols}) "
                                                      f"SELECT ?, {cols} FROM _rows")
        if report.rows == 0:
            return report                                  # nothing changed: no snapshot, no watermark row
        s.run("watermark", sql=f"INSERT INTO {LAKE}.{T.PUBLISHES} VALUES (?, ?, ?, ?, ?, ?)",
              params=[shard, report.publish_id, utcnow(), json.dumps(report.inserted),
                      json.dumps(report.deleted), json.dumps(report.totals)])
        if fault == "before_commit":
            os.kill(os.getpid(), 9)                        # a test's kill -9 inside the transaction
    report.snapshot = s.scalar(f"SELECT max(snapshot_id) FROM {LAKE}.snapshots()")
    return report


def _store_changes(db: Database, table: str, lake_keys: pa.Table, embeddings: bool) -> tuple[pa.Table, pa.Table]:
    """(rows to insert, lake keys to delete) of one table, read in the current store snapshot."""
    columns = store_columns(db, table)
    if not columns:
        return pa.table({}), pa.table({"_key": pa.array([], pa.string())})
    sel = T.select_list(columns, embeddings=embeddings)
    body = (f"SELECT {T.key_expr(table)} AS _key, {T.hash_expr(dict(columns))} AS _hash, "
            + ", ".join(f"{expr} AS {quote_ident(c)}" for c, expr in sel) + f" FROM {quote_ident(table)}")
    name = f"_lake_keys_{table}"
    with registered(db, name, lake_keys):
        rows = db.arrow(f"lake:changed:{table}",
                        sql=f"WITH s AS ({body}) SELECT s.* FROM s ANTI JOIN {name} k "
                            "ON s._key = k._key AND s._hash = k._hash")
        gone = db.arrow(f"lake:gone:{table}",
                        sql=f"WITH s AS (SELECT {T.key_expr(table)} AS _key, {T.hash_expr(dict(columns))} AS _hash "
                            f"FROM {quote_ident(table)}) SELECT DISTINCT k._key FROM {name} k ANTI JOIN s "
                            "ON s._key = k._key AND s._hash = k._hash")
    return rows, gone


def store_columns(db: Database, table: str) -> dict[str, str]:
    """{column: type} of a store table, read now on this thread's cursor (not `db.column_types`'s
    cache: a publish must see columns a migration added since the store was opened)."""
    return dict(db.rows("lake:columns", [table], sql="SELECT column_name, data_type FROM information_schema.columns "
                                                      "WHERE table_name = ? AND table_schema = 'main' "
                                                      "ORDER BY ordinal_position"))


def ensure_lake(s: LakeSession, db: Database, wanted: tuple[str, ...], *, embeddings: bool) -> None:
    """Create the lake's tables (partitioned) and settings the first time; add columns the store
    gained since. Settings: no inlined rows in the catalog (every row lives in a Parquet file,
    which erasure can rewrite) — see memstore/lake/erasure.py for text statistics."""
    existing = {r[0]: r[1] for r in s.rows("tables", sql="SELECT table_name, 1 FROM duckdb_tables() "
                                                         f"WHERE database_name = {quote(LAKE)}")}
    if "data_inlining_row_limit" not in _options(s):
        s.run("option:inlining", sql=f"CALL {LAKE}.set_option('data_inlining_row_limit', 0)")
    if T.PUBLISHES not in existing:
        s.run("create:publishes", sql=f"CREATE TABLE IF NOT EXISTS {LAKE}.{T.PUBLISHES} (shard VARCHAR, "
                                      "publish_id VARCHAR, published_at TIMESTAMP, inserted VARCHAR, "
                                      "deleted VARCHAR, totals VARCHAR)")
        _partition(s, T.PUBLISHES, "shard")
    for t in wanted:
        columns = store_columns(db, t)
        if not columns:
            continue
        sel = dict(T.select_list(columns, embeddings=embeddings))
        lake_cols = {c: T.lake_type(columns[c]) for c in sel}
        if t not in existing:
            defs = ", ".join(f"{quote_ident(c)} {typ}" for c, typ in {**T.EXTRA, **lake_cols}.items())
            s.run(f"create:{t}", sql=f"CREATE TABLE IF NOT EXISTS {LAKE}.{quote_ident(t)} ({defs})")
            _partition(s, t, T.partition_clause(columns))
            continue
        have = {r[0] for r in s.rows(f"columns:{t}", [t], sql="SELECT column_name FROM duckdb_columns() "
                                                              f"WHERE database_name = {quote(LAKE)} AND table_name = ?")}
        for c, typ in lake_cols.items():
            if c not in have:
                s.run(f"alter:{t}:{c}", sql=f"ALTER TABLE {LAKE}.{quote_ident(t)} ADD COLUMN IF NOT EXISTS "
                                            f"{quote_ident(c)} {typ}")


def _partition(s: LakeSession, table: str, clause: str) -> None:
    try:
        s.run(f"partition:{table}", sql=f"ALTER TABLE {LAKE}.{quote_ident(table)} SET PARTITIONED BY ({clause})")
    except LakeError:
        if "bucket" not in clause:
            raise
        s.run(f"partition:{table}", sql=f"ALTER TABLE {LAKE}.{quote_ident(table)} SET PARTITIONED BY (shard)")


def _options(s: LakeSession) -> set[str]:
    try:
        return {r[0] for r in s.rows("options", sql=f"SELECT option_name FROM {LAKE}.options() WHERE scope = 'GLOBAL'")}
    except LakeError:
        return set()

