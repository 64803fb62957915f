"""Read a Parquet export back: check it is whole and unaltered, then load it into a new store.

`verify_export` checks, before anything is written: manifest.json parses and is a memstore export, the
schema version is not newer than this memstore's, and every listed file exists with the manifest's
sha256 and row count. `load_export` inserts every table in ONE transaction (`INSERT … BY NAME`,
so an export from an older schema loads into the current one; new columns take their defaults).
The tables the re-cluster keeps sorted by scope are written in that order and recorded as one sorted
run (memstore/store/cluster_runs.py), so the new store's first re-cluster pass sorts only what is
added after the import.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.analysis.manifest import FORMAT, MANIFEST, parquet_rows, read_manifest, sha256_file  # noqa: F401
from memstore.analysis.parquet_export import store_tables
from memstore.core.errors import ExportError
from memstore.store.cluster_runs import META_KEY as RUNS_KEY
from memstore.store.cluster_runs import RUN_KEYS, mark_end, write_runs
from memstore.store.quoting import sql_ident
from memstore.store.sqlfiles import migration_files
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database




def verify_export(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest, once every file it lists is present with the recorded sha256 and row count."""
    root = Path(directory)
    manifest = read_manifest(root)
    newest = max((v for v, _, _ in migration_files()), default=0)
    if int(manifest["schema_version"]) > newest:
        raise ExportError(f"export {root} has schema version {manifest['schema_version']}; this memstore knows "
                          f"up to {newest}", hint="upgrade memstore to import it", path=str(root))
    for f in manifest["files"]:
        rel = Path(f["path"])
        if rel.is_absolute() or ".." in rel.parts:
            raise ExportError(f"manifest of {root} lists a path outside the export: {f['path']!r}", path=f["path"])
        path = root / rel
        if not path.is_file():
            raise ExportError(f"export file {f['path']} is missing from {root}",
                              hint="the export is incomplete; copy the whole directory or export again",
                              path=str(path))
        digest = sha256_file(path)
        if digest != f["sha256"]:
            raise ExportError(f"export file {f['path']} was altered: sha256 {digest[:12]}… but the manifest "
                              f"says {f['sha256'][:12]}…", hint="the file changed after the export; export again "
                              "(or, if an erasure rewrote it, run refresh_manifest)",
                              path=str(path), expected=f["sha256"], actual=digest)
        rows = parquet_rows(path)
        if rows != f["rows"]:
            raise ExportError(f"export file {f['path']} holds {rows} rows, the manifest says {f['rows']}",
                              path=str(path), expected=f["rows"], actual=rows)
    return manifest


def load_export(db: Database, directory: str | os.PathLike, manifest: dict[str, Any]) -> dict[str, int]:
    """Insert every exported table into `db` in one transaction; returns rows per table."""
    root = Path(directory).resolve()
    targets = store_tables(db)
    unknown = sorted(set(manifest["tables"]) - set(targets))
    if unknown:
        raise ExportError(f"export holds table(s) {unknown} that this store does not have",
                          hint="import with the memstore version that wrote the export", tables=unknown)
    counts: dict[str, int] = {}
    with write_unit(db, "import_parquet"):
        for table in manifest["tables"]:
            paths = [str(root / f["path"]) for f in manifest["files"] if f["table"] == table and f["rows"] > 0]
            counts[table] = sum(f["rows"] for f in manifest["files"] if f["table"] == table)
            if not paths:
                continue
            keep = ""
            if table == "store_meta":      # the new store wrote its own dim/embedder rows already
                # where the source's sorted runs ended says nothing about the rows here: this store
                # keeps its own (memstore/store/cluster_runs.py); the imported rows are its tail
                keep = " WHERE key <> $runs"
                runs = {"files": paths, "runs": RUNS_KEY}
                counts[table] -= db.rows("import:store_meta_runs", runs, sql=(
                    "SELECT count(*) FROM read_parquet($files) WHERE key = $runs"))[0][0]
                db.run("import:store_meta", runs, sql=(
                    "DELETE FROM store_meta WHERE key IN (SELECT key FROM read_parquet($files)) AND key <> $runs"))
            if table in RUN_KEYS:          # in the re-cluster's order (sql/queries/admin/recluster_copy.sql)
                keep = " ORDER BY user_id NULLS LAST, agent_id NULLS LAST, run_id NULLS LAST"
            inserted = db.run(f"import:{table}", {"files": paths, **({"runs": RUNS_KEY} if table == "store_meta" else {})},
                              sql=(f"INSERT INTO {sql_ident(table)} BY NAME SELECT * FROM read_parquet($files, "
                                   "union_by_name = true)" + keep)).fetchone()[0]
            if inserted != counts[table]:
                raise ExportError(f"import of {table} inserted {inserted} rows, the manifest says {counts[table]}")
        write_runs(db, [mark_end(db)])         # each table as written: one sorted run
        db.run("queries/set_clustered_rows", {"rows": int(db.scalar("SELECT count(*) FROM memories") or 0)})
    return counts
