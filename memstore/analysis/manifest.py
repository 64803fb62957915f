"""The manifest of a Parquet export: its format, checksums and row counts, read and written.

Shared by the export (`parquet_export.py`), the import (`parquet_import.py`) and erasure, which
rewrites export files and then refreshes the manifest.

>>> FORMAT
'memstore-parquet-export'
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from memstore.core.errors import ExportError
from memstore.core.timeutil import utcnow

MANIFEST = "manifest.json"
FORMAT = "memstore-parquet-export"
FORMAT_VERSION = 1


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parquet_rows(path: str | os.PathLike) -> int:
    """Row count from the Parquet footer (no data read)."""
    return int(pq.read_metadata(path).num_rows)


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The parsed manifest.json of an export directory."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise ExportError(f"{directory} is not a memstore export: no {MANIFEST}",
                          hint="point at the directory `m.export_parquet(dir)` / `memstore export DIR` wrote",
                          path=str(path))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path} is not valid JSON: {exc}", hint="the export is damaged; export again",
                          path=str(path)) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ExportError(f"{path} is not a memstore export manifest (format {found!r}, expected {FORMAT!r})",
                          path=str(path))
    for key in ("schema_version", "tables", "files", "store_meta"):
        if key not in manifest:
            raise ExportError(f"{path} lacks {key!r}", hint="the export is damaged; export again", path=str(path))
    return manifest


def write_manifest(directory: str | os.PathLike, manifest: dict[str, Any]) -> Path:
    """Write manifest.json atomically (temp file + rename)."""
    path = Path(directory) / MANIFEST
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)
    return path


def refresh_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """Recount rows and recompute checksums after files of an export were rewritten (erasure):
    entries whose file is gone are dropped, table row counts are summed again."""
    out = Path(directory)
    manifest = read_manifest(out)
    kept = []
    for f in manifest["files"]:
        p = out / f["path"]
        if p.is_file():
            kept.append(dict(f, rows=parquet_rows(p), sha256=sha256_file(p)))
    manifest["files"] = kept
    for table, info in manifest["tables"].items():
        info["rows"] = sum(f["rows"] for f in kept if f["table"] == table)
    manifest["refreshed_at"] = utcnow().isoformat()
    write_manifest(out, manifest)
    return manifest
