"""Load one scope's Parquet export into a store that is already in use (a shard receiving a moved
scope), idempotently: a row whose key the store already has is skipped, so a move that was cut off
and re-run never stores a row twice.

The export is checked first (manifest, sha256 and row counts: `verify_export`); every table then
goes in with `INSERT … BY NAME … WHERE NOT EXISTS (same key)` in ONE transaction, and before the
commit every exported row's key is looked up in the store: a missing one rolls everything back.

>>> ROW_KEYS["memories"], ROW_KEYS["keyword_postings"]
(('id',), ('memory_id', 'term'))
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.analysis.parquet_export import store_tables
from memstore.analysis.parquet_import import verify_export
from memstore.core.errors import ExportError
from memstore.store.quoting import sql_ident
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

# The columns that identify a row of each table (tables without a primary key included).
ROW_KEYS: dict[str, tuple[str, ...]] = {
    "memories": ("id",), "entities": ("id",), "entity_postings": ("entity_id", "memory_id"),
    "keyword_postings": ("memory_id", "term"), "memory_links": ("src_id", "dst_id", "kind"),
    "ingest_log": ("scope_key", "source_format", "conversation_id", "message_key"),
}
# Store-wide tables a scope export carries but a receiving store keeps its own of.
NOT_MERGED = frozenset({"store_meta", "exports", "erasure_receipts", "pending_erasures"})


def merge_scope_export(db: Database, directory: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Insert the rows of a scope export (`export_parquet(dir, scope=...)`) that `db` lacks.

    Returns, per table, {"exported": n, "inserted": k}; raises ExportError (nothing stored) when
    the export is damaged, names a table this store lacks, or a row is missing after the insert."""
    manifest = verify_export(directory)
    if not manifest.get("scope_keys"):
        raise ExportError(f"{directory} is an export of the whole store, not of one scope",
                          hint="export with scope={'user_id': ...}", path=str(directory))
    root = Path(directory).resolve()
    targets = store_tables(db)
    counts: dict[str, dict[str, int]] = {}
    with write_unit(db, "merge_scope"):
        for table in manifest["tables"]:
            if table in NOT_MERGED:
                continue
            if table not in targets:
                raise ExportError(f"export holds table {table!r} that this store does not have",
                                  hint="upgrade this shard to the memstore version of the other shards", table=table)
            paths = [str(root / f["path"]) for f in manifest["files"] if f["table"] == table and f["rows"] > 0]
            exported = sum(f["rows"] for f in manifest["files"] if f["table"] == table)
            counts[table] = {"exported": exported, "inserted": 0}
            if not paths:
                continue
            keys = ROW_KEYS.get(table, ("id",))
            if not all(k in {c for c, _ in targets[table]} for k in keys):
                raise ExportError(f"no row key known for table {table!r}", table=table)
            t = sql_ident(table)
            match = " AND ".join(f"t.{sql_ident(k)} IS NOT DISTINCT FROM s.{sql_ident(k)}" for k in keys)
            source = "read_parquet($files, union_by_name = true)"
            inserted = db.run(f"merge:{table}", {"files": paths}, sql=(
                f"INSERT INTO {t} BY NAME SELECT s.* FROM {source} AS s "
                f"WHERE NOT EXISTS (SELECT 1 FROM {t} AS t WHERE {match})")).fetchone()[0]
            missing = db.run(f"merge_check:{table}", {"files": paths}, sql=(
                f"SELECT count(*) FROM {source} AS s WHERE NOT EXISTS (SELECT 1 FROM {t} AS t WHERE {match})"
            )).fetchone()[0]
            if missing:
                raise ExportError(f"{missing} exported row(s) of {table} are missing after the merge; rolled back",
                                  table=table)
            counts[table]["inserted"] = int(inserted)
    return counts
