"""Erase a scope from the Parquet exports and snapshots memstore wrote (registered in `exports`).

Contract with the exporter: each registered directory holds `manifest.json` with
`{"files": [{"table", "path", "rows", "sha256"}, ...], ...}`; `path` is relative to the directory
(absolute paths are accepted). A file is filtered with the same rules as the database (identity
columns, scope_key, memory ids, orphaned entities); Hive partition segments in its path
(`user_id=alice/…`) count as columns. A file whose partition path names the scope is removed (and
its emptied folders: their names hold the id), as is a file left with no rows when its table has
other files; any other file that loses rows is rewritten with its original compression. The
manifest's `files` (`rows`, `sha256`) and per-table `rows` are updated. Old bytes are zeroed
(see scrub_files).

Every step is a rename, so an erasure killed at any point resumes (`resumed=True`): a rewritten
file holding none of the scope's rows gets its manifest entry updated, a listed file that is gone
loses its entry, and `*.erase-tmp` files (a rewrite's copy, a file being removed) are scrubbed.
"""
from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.analysis.manifest import sha256_file  # the export manifest's checksum
from memstore.core.errors import QueryError
from memstore.core.identity import IDENTITY_KEYS
from memstore.governance.catalog import MEMORY_REF_COLUMNS, is_attributable, quote_ident, sql_string
from memstore.governance.scrub_files import _fsync_dir as fsync_dir
from memstore.governance.scrub_files import remove_scrubbing, replace_scrubbing
from memstore.governance.verify_erasure import live_needles, needle_rows
from memstore.store.scratch import Scratch
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database


@dataclass
class ExportErasure:
    """Files touched, and what verification needs (all files, scope rows left, shared needles)."""

    files: list[dict[str, Any]] = field(default_factory=list)
    all_files: list[str] = field(default_factory=list)
    rows_left: dict[str, int] = field(default_factory=dict)
    live: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def partition_values(rel_path: str) -> dict[str, str]:
    """Hive partition columns in a relative path.

    >>> partition_values("memories/user_id=al%20ice/agent_id=x/part-0.parquet")
    {'user_id': 'al ice', 'agent_id': 'x'}
    """
    out = {}
    for seg in Path(rel_path).parts[:-1]:
        if "=" in seg:
            k, v = seg.split("=", 1)
            out[urllib.parse.unquote(k)] = urllib.parse.unquote(v)
    return out


def registered_exports(db: Database) -> list[tuple[str, str, str]]:
    """(id, path, kind) of every registered export."""
    return [tuple(r) for r in db.rows("queries/list_exports")]


def erase_exports(db: Database, scope: dict[str, str], memory_ids: list[str], entity_ids: list[str],
                  needles: list[str], *, resumed: bool = False) -> ExportErasure:
    """Rewrite every registered export without the scope. Returns what was done. `resumed`: an
    interrupted erasure is being finished, so a file whose checksum differs from its manifest entry
    but holds none of the scope's rows is this erasure's own rewrite: its entry is brought up to date."""
    out = ExportErasure()
    rename_named_exports(db, scope, out)
    with db.scratch("erase_exports") as scratch:
        scratch.register("erase_memory_ids", pa.table({"id": pa.array(memory_ids, pa.string())}))
        scratch.register("erase_entity_ids", pa.table({"id": pa.array(entity_ids, pa.string())}))
        for export_id, path, _kind in registered_exports(db):
            if not Path(path).exists():
                continue                    # removed since: nothing left to erase (doctor reports it)
            manifest_path = Path(path) / "manifest.json"
            if not manifest_path.is_file():
                out.problems.append(f"export {export_id}: no manifest at {manifest_path}")
                continue
            try:
                _erase_one(db, scratch, Path(path), manifest_path, scope, out, needles, resumed)
            except (OSError, ValueError, QueryError) as exc:   # one broken export must not stop the rest
                out.problems.append(f"export {export_id} at {path}: {type(exc).__name__}: {exc}")
    return out


def names_value(value: str) -> re.Pattern[str]:
    """A pattern finding `value` as a whole word of a name (not inside a longer word).

    >>> bool(names_value("alice").search("dsar-Alice")), bool(names_value("al").search("dsar-alice"))
    (True, False)
    """
    return re.compile(r"(?<![^\W_])" + re.escape(value) + r"(?![^\W_])", re.IGNORECASE)


def rename_named_exports(db: Database, scope: dict[str, str], out: ExportErasure) -> None:
    """A registered export folder whose name holds one of the scope's values (`dsar-alice/`) is
    renamed `export-<export id>` and re-registered, so neither the disk nor the registry keeps the
    id. The new name is fixed by the export id, so an interrupted erasure resumes: a folder already
    renamed is only re-registered."""
    for export_id, path, _kind in registered_exports(db):
        old = Path(path)
        if not any(v and names_value(v).search(old.name) for v in scope.values()):
            continue
        target = old.parent / f"export-{export_id}"
        if old.exists() and not target.exists():
            os.replace(old, target)
            fsync_dir(target.parent)
        if target.exists():
            with write_unit(db, "forget:rename_export"):
                db.run("queries/update_export_path", {"id": export_id, "path": str(target)})
            out.files.append({"path": str(old), "table": None, "rows_removed": 0, "action": "renamed",
                              "renamed_to": str(target)})


def _erase_one(db: Database, scratch: Scratch, root: Path, manifest_path: Path,
               scope: dict[str, str], out: ExportErasure, needles: list[str], resumed: bool = False) -> None:
    for leftover in root.rglob("*.erase-tmp"):      # an interrupted rewrite's copy
        remove_scrubbing(leftover)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    entries: list[dict | None] = [dict(e) for e in manifest.get("files", [])]
    # entities go last: which ones to drop depends on the postings dropped from this export
    order = sorted(range(len(entries)), key=lambda i: entries[i].get("table") == "entities")
    dropped_entities: set[str] = set()
    kept_entities: set[str] = set()
    changed = False
    for i in order:
        entry = entries[i]
        rel = entry.get("path", "")
        file = Path(rel) if os.path.isabs(rel) else root / rel
        table = entry.get("table") or file.stem
        if not file.is_file():
            if resumed:     # this erasure removed it before it was interrupted: drop the entry
                _prune_dirs(file.parent, root)      # and the emptied partition folders it may have left
                out.files.append({"path": str(file), "table": table, "rows_removed": None, "action": "removed"})
                entries[i] = None
                changed = True
                continue
            out.problems.append(f"{file}: listed in {manifest_path} but missing")
            continue
        out.all_files.append(str(file))
        if file.suffix != ".parquet":
            out.problems.append(f"{file}: not Parquet, left as is")
            continue
        src = f"read_parquet({sql_string(str(file))})"
        cols = [r[0] for r in scratch.rows("describe", sql=f"DESCRIBE SELECT * FROM {src}")]
        if table == "entities":
            drop = set(_db_unused(db, dropped_entities - kept_entities))
            drop |= {r[0] for r in scratch.rows("entity_ids", sql="SELECT id FROM erase_entity_ids")}
            scratch.register("erase_export_entities", pa.table({"id": pa.array(sorted(drop), pa.string())}))
            cond = '"id" IN (SELECT id FROM erase_export_entities)' if "id" in cols else "FALSE"
        else:
            cond = _condition(scope, cols, partition_values(os.path.relpath(file, root)))
        if cond is None:  # every row is the scope's, by the file's partition path
            removed = scratch.scalar(f"SELECT count(*) FROM {src}")
            _remove_listed(file)
            _prune_dirs(file.parent, root)
            out.all_files.remove(str(file))
            out.files.append({"path": str(file), "table": table, "rows_removed": int(removed), "action": "removed"})
            entries[i] = None
            changed = True
            continue
        params = _params(scope, cond)
        if table == "entity_postings" and "entity_id" in cols:
            for (eid, mine) in scratch.rows("posted_entities", params,
                                        sql=f"SELECT entity_id, coalesce({cond}, false) FROM {src}"):
                (dropped_entities if mine else kept_entities).add(eid)
        removed = scratch.scalar(f"SELECT count(*) FROM {src} WHERE {cond}", params)
        total = scratch.scalar(f"SELECT count(*) FROM {src}")
        siblings = sum(1 for e in entries if e is not None and e.get("table") == entry.get("table"))
        if removed and removed == total and siblings > 1:
            # a partition file holding only this scope: remove it rather than leave an empty trace
            _remove_listed(file)
            out.all_files.remove(str(file))
            out.files.append({"path": str(file), "table": table, "rows_removed": int(removed), "action": "removed"})
            entries[i] = None
            changed = True
            continue
        if not removed and resumed and entry.get("sha256") and sha256_file(file) != entry["sha256"]:
            entry["rows"], entry["sha256"] = int(total), sha256_file(file)
            changed = True
        if removed:
            codec = scratch.scalar(f"SELECT compression FROM parquet_metadata({sql_string(str(file))}) LIMIT 1")
            codec = (codec or "ZSTD").lower()
            tmp = file.with_name(file.name + ".erase-tmp")
            scratch.run("rewrite", params, sql=f"COPY (SELECT * FROM {src} WHERE NOT coalesce({cond}, false)) "
                    f"TO {sql_string(str(tmp))} (FORMAT parquet, COMPRESSION {quote_ident(codec)})")
            replace_scrubbing(tmp, file)
            entry["rows"] = int(scratch.scalar(f"SELECT count(*) FROM {src}"))
            entry["sha256"] = sha256_file(file)
            out.files.append({"path": str(file), "table": table, "rows_removed": int(removed), "action": "rewritten",
                              "sha256": entry["sha256"]})
            changed = True
            left = scratch.scalar(f"SELECT count(*) FROM {src} WHERE {cond}", params)
            if left:
                out.rows_left[str(file)] = int(left)
        text_cols = [r[0] for r in scratch.rows("describe", sql=f"DESCRIBE SELECT * FROM {src}")
                     if r[1].startswith("VARCHAR") or r[1] == "JSON"]
        part = partition_values(os.path.relpath(file, root))
        if is_attributable(table, list(cols) + list(part)):
            out.live |= live_needles(scratch, {src: text_cols}, needles)
        else:  # nothing says whose these rows are: a needle here counts as left behind
            found = needle_rows(scratch, {src: text_cols}, needles).get(src, {})
            if found:
                out.rows_left[str(file)] = out.rows_left.get(str(file), 0) + sum(found.values())
    if changed:
        manifest["files"] = [e for e in entries if e is not None]
        for table, info in (manifest.get("tables") or {}).items():
            if isinstance(info, dict) and "rows" in info:
                info["rows"] = sum(int(e.get("rows") or 0) for e in manifest["files"] if e.get("table") == table)
        tmp = manifest_path.with_name("manifest.json.erase-tmp")
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
        replace_scrubbing(tmp, manifest_path)
        out.files.append({"path": str(manifest_path), "table": None, "rows_removed": 0, "action": "manifest_updated"})
    out.all_files.append(str(manifest_path))


def _remove_listed(file: Path) -> None:
    """Remove a file the manifest lists: rename it to `<name>.erase-tmp` (the commit point), then
    zero and delete that. Zeroing it in place first would leave, if the process died before the
    unlink, a file the manifest still lists that is no longer Parquet: the resumed erasure could
    not read it, skipped the whole export (its other files unfiltered) and stored an unverified
    receipt. After the rename a resumed erasure finds the file missing and drops its entry, and
    scrubs the `.erase-tmp` left behind."""
    staged = file.with_name(file.name + ".erase-tmp")
    os.replace(file, staged)
    fsync_dir(file.parent)
    remove_scrubbing(staged)


def _condition(scope: dict[str, str], cols: list[str], part: dict[str, str]) -> str | None:
    """SQL condition selecting the scope's rows of one file; None = every row (by partition path);
    'FALSE' = none."""
    path_keys = {k: v for k, v in part.items() if k in IDENTITY_KEYS}
    if any(k in path_keys and path_keys[k] != v for k, v in scope.items()):
        by_identity = "FALSE"           # the path names another scope
    elif all(k in path_keys for k in scope):
        return None
    elif all(k in path_keys or k in cols for k in scope):
        by_identity = " AND ".join(f"{quote_ident(k)} = ${k}" for k in sorted(scope) if k not in path_keys)
    else:
        by_identity = "FALSE"
    conds = [f"({by_identity})"] if by_identity != "FALSE" else []
    for c in MEMORY_REF_COLUMNS:
        if c in cols:
            conds.append(f"{quote_ident(c)} IN (SELECT id FROM erase_memory_ids)")
    if "id" in cols and "memory" in cols:
        conds.append('"id" IN (SELECT id FROM erase_memory_ids)')
    return " OR ".join(conds) if conds else "FALSE"


def _params(scope: dict[str, str], cond: str) -> dict[str, str] | None:
    used = {k: v for k, v in scope.items() if f"${k}" in cond}
    return used or None


def _db_unused(db: Database, ids: set[str]) -> list[str]:
    """Of these entity ids, those no live posting in the database names."""
    if not ids:
        return []
    used = {r[0] for r in db.rows("queries/entities_in_use", {"ids": sorted(ids)})}
    return [i for i in ids if i not in used]


def _prune_dirs(folder: Path, root: Path) -> None:
    """Remove empty partition folders up to the export root (their names may hold the id)."""
    folder, root = folder.resolve(), root.resolve()
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
