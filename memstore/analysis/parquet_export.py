"""Export every table of a store as zstd Parquet with a manifest, and register the export.

Layout of an export directory (partition_by="user_id"):

    manifest.json
    memories/part-00000.parquet      one file per user_id value (NULL included): a file never mixes
    memories/part-00001.parquet      two users' rows, so erasing one user rewrites only their files
    entities/all.parquet             tables without the partition column: one file
    ...

File names carry no identity (ids are personal data; names would outlive an erasure), and neither
does the manifest: `manifest.json` holds the format, the schema version (max of schema_migrations),
store_meta (embedding dimension, embedder), the embedder config (without api_key), the scope's KEYS
(not its values), per-table row counts and column types, and `files`:
[{"table", "path" (relative, posix), "rows", "sha256"}]. Rows say whose they are through their
identity columns; erasure filters on those, rewrites files and calls `refresh_manifest` (or updates
rows and sha256 itself).

Every COPY runs in one read transaction, so the files are one consistent snapshot; the export is
registered in `exports` (kind "parquet_export") only after manifest.json is written.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.analysis.frames import check_scope
from memstore.analysis.manifest import FORMAT, FORMAT_VERSION, MANIFEST, parquet_rows, sha256_file, write_manifest  # noqa: F401
from memstore.core.errors import ExportError, ExportExistsError, ReadOnlyError
from memstore.core.identity import IDENTITY_KEYS
from memstore.core.ids import new_id
from memstore.core.timeutil import utcnow
from memstore.store.quoting import sql_ident, sql_string
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

NOT_EXPORTED = ("schema_migrations", "exports",   # rebuilt by the importing store itself
                "api_tokens")                   # credentials stay with the store they were made for
PARTITION_KEYS = IDENTITY_KEYS + ("scope_key",)
_PART = "__memstore_part"






def store_tables(db: Database) -> dict[str, list[tuple[str, str]]]:
    """{table: [(column, type), ...]} for the store's tables, excluding NOT_EXPORTED."""
    rows = db.rows("store_tables", sql=(
        "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c "
        "JOIN duckdb_tables() t ON t.table_oid = c.table_oid "
        "WHERE t.schema_name = 'main' AND NOT t.temporary AND t.database_name = current_database() "
        "ORDER BY c.table_name, c.column_index"))
    out: dict[str, list[tuple[str, str]]] = {}
    for table, col, typ in rows:
        if table not in NOT_EXPORTED:
            out.setdefault(table, []).append((col, typ))
    return out


def schema_version(db: Database) -> tuple[int, list[str]]:
    rows = db.rows("schema_version", sql="SELECT version, name FROM schema_migrations ORDER BY version")
    return (max((r[0] for r in rows), default=0), [r[1] for r in rows])


def _scope_filter(table: str, columns: list[str], scope: dict[str, str]) -> str | None:
    """WHERE condition (using $user_id, ...) selecting the scope's rows; None: the table cannot be scoped."""
    if not scope:
        return "TRUE"
    if all(k in columns for k in scope):
        return " AND ".join(f"{sql_ident(k)} = ${k}" for k in scope)
    if table == "entities":
        cond = " AND ".join(f"p.{sql_ident(k)} = ${k}" for k in scope)
        return f"\"id\" IN (SELECT p.\"entity_id\" FROM \"entity_postings\" AS p WHERE {cond})"
    if table == "store_meta":
        return "TRUE"
    return None


def _part_sql(col: str) -> str:
    """A file-name-safe partition key for a value: its md5 (NULL gets its own)."""
    c = sql_ident(col)
    return f"CASE WHEN {c} IS NULL THEN 'null' ELSE md5({c}) END"


def _copy(db: Database, select: str, target: Path, params: dict[str, str], partition: str | None = None) -> None:
    opts = "FORMAT parquet, COMPRESSION zstd"
    if partition:
        opts += f", PARTITION_BY ({sql_ident(partition)})"
    db.run("export:copy", params or None, sql=f"COPY ({select}) TO {sql_string(target)} ({opts})")


def _export_table(db: Database, out: Path, table: str, columns: list[str], where: str, params: dict[str, str],
                  partition_by: str | None) -> list[dict[str, Any]]:
    folder = out / table
    folder.mkdir()
    used = {k: v for k, v in params.items() if f"${k}" in where}
    n = db.scalar(f"SELECT count(*) FROM {sql_ident(table)} WHERE {where}", used or None)
    if not partition_by or partition_by not in columns or n == 0:
        target = folder / "all.parquet"
        _copy(db, f"SELECT * FROM {sql_ident(table)} WHERE {where}", target, used)
        return [{"table": table, "path": f"{table}/all.parquet", "rows": parquet_rows(target)}]
    staging = out / f".staging-{table}"
    _copy(db, f"SELECT *, {_part_sql(partition_by)} AS {_PART} FROM {sql_ident(table)} WHERE {where}",
          staging, used, partition=_PART)
    files: list[dict[str, Any]] = []
    for src in sorted(staging.rglob("*.parquet")):
        dst = folder / f"part-{len(files):05d}.parquet"
        os.replace(src, dst)
        files.append({"table": table, "path": f"{table}/{dst.name}", "rows": parquet_rows(dst)})
    shutil.rmtree(staging)
    if sum(f["rows"] for f in files) != n:
        raise ExportError(f"export of {table} wrote {sum(f['rows'] for f in files)} rows, expected {n}")
    return files


def export_parquet(db: Database, directory: str | os.PathLike, *, scope: dict[str, Any] | None = None,
                   partition_by: str | None = "user_id", embedder: dict[str, Any] | None = None,
                   include_reads: bool = False) -> dict[str, Any]:
    """Write every table of `db` under `directory` (must be new or empty); returns the manifest.
    The audit of reads (`reads`) only with `include_reads=True`."""
    if db.read_only:
        raise ReadOnlyError(f"store {db.path} is open read-only: an export must be registered in it",
                            hint="open the store read-write to export (erasure finds exports through that registry)")
    if partition_by is not None and partition_by not in PARTITION_KEYS:
        raise ExportError(f"partition_by={partition_by!r} is not a partition key",
                          hint=f"use one of {', '.join(PARTITION_KEYS)}, or None for one file per table")
    scope = check_scope(scope)
    out = Path(directory).resolve()
    try:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ExportExistsError(f"export directory {out} exists and is not empty",
                                    hint="choose a new directory: an export never overwrites files", path=str(out))
        created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:     # a file where a folder of the path should be
        raise ExportExistsError(f"cannot make export directory {out}: {exc.strerror}",
                                hint="choose a new directory: an export never overwrites files", path=str(out)) from None
    except OSError as exc:      # a name too long, no permission, a read-only disk
        raise ExportError(f"cannot make export directory {out}: {exc.strerror or exc}",
                          hint="choose a directory you can write to", path=str(out)) from None
    export_id, now = new_id(), utcnow()
    try:
        with db.snapshot("export"):               # one snapshot for every table
            tables = store_tables(db)
            if not include_reads:
                tables.pop("reads", None)
            version, migrations = schema_version(db)
            meta = dict(db.rows("export:meta", sql="SELECT key, value FROM store_meta"))
            files: list[dict[str, Any]] = []
            table_info: dict[str, Any] = {}
            skipped: dict[str, str] = {}
            for table, cols in tables.items():
                names = [c for c, _ in cols]
                where = _scope_filter(table, names, scope)
                if where is None:
                    skipped[table] = "no identity columns, so its rows cannot be scoped"
                    continue
                written = _export_table(db, out, table, names, where, scope, partition_by)
                files.extend(written)
                table_info[table] = {"rows": sum(f["rows"] for f in written), "columns": [list(c) for c in cols]}
    except BaseException:
        _clean(out, created)
        raise
    for f in files:
        f["sha256"] = sha256_file(out / f["path"])
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "id": export_id, "kind": "parquet_export",
        "created_at": now.isoformat(), "source_store": db.path,
        "schema_version": version, "migrations": migrations, "store_meta": meta,
        "embedder": {k: v for k, v in (embedder or {}).items() if k != "api_key"},
        "scope_keys": sorted(scope), "partition_by": partition_by, "compression": "zstd",
        "tables": table_info, "skipped_tables": skipped,
        "files": [{k: f[k] for k in ("table", "path", "rows", "sha256")} for f in files],
    }
    try:
        write_manifest(out, manifest)
        with write_unit(db, "register_export"):
            db.run("queries/insert_export", {"id": export_id, "path": str(out), "kind": "parquet_export",
                                             "created_at": now})
    except BaseException:
        _clean(out, created)
        raise
    return manifest






def _clean(out: Path, created: bool) -> None:
    """Remove what a failed export wrote (the directory was new or empty when it started)."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
        return
    for child in out.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
