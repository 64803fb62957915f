"""doctor(): check the store's invariants and report every violation as a Polars frame;
`repair=True` fixes what is safe to fix.

Each check is a named SQL file in `sql/queries/doctor/` returning (table, row_id, detail), with an
optional `repair_<name>.sql`; a few checks need Python (files on disk, re-embedding, every table
with a scope_key). Severity "error" = an invariant the rest of memstore relies on is broken (a
posting without its memory, a scope mismatch, a NaN embedding); "warning" = stale or unverifiable
but harmless to reads (an entity nobody names, a skipped rewrite).

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "d.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> _ = m.add("Bea lives in Lisbon", user_id="bea", infer=False)
>>> _ = m.db.con.execute("DELETE FROM memories")          # behind the API's back
>>> sorted(set(m.doctor()["check"]))
['orphan_entity_postings', 'orphan_keyword_postings']
>>> fixed = m.doctor(repair=True)
>>> fixed.filter(fixed["repairable"])["repaired"].all(), m.doctor().height
(True, 0)
>>> m.close()
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from memstore.core.identity import IDENTITY_KEYS
from memstore.governance.catalog import relation, table_columns
from memstore.store.database import registered
from memstore.store.sqlfiles import load_sql
from memstore.store.unit import write_unit
from memstore.store.write_values import vectors_table

if TYPE_CHECKING:
    from memstore.runtime import Runtime

COLUMNS = {"check": pl.Utf8, "severity": pl.Utf8, "table": pl.Utf8, "row_id": pl.Utf8, "detail": pl.Utf8,
           "repairable": pl.Boolean, "repaired": pl.Boolean}
Rows = list[tuple[str, str | None, str]]          # (table, row_id, detail)


@dataclass(frozen=True)
class Check:
    """One invariant: how to find violations and, if safe, how to repair them."""

    name: str
    severity: str
    find: Callable[[Any], Rows]
    repair: Callable[[Any], None] | None = None
    when: Callable[[Any], bool] = lambda rt: True


def _sql_check(name: str) -> Callable[[Any], Rows]:
    return lambda rt: [tuple(r) for r in rt.db.rows(f"queries/doctor/{name}")]


def _sql_repair(name: str) -> Callable[[Any], None]:
    return lambda rt: rt.db.run(f"queries/doctor/repair_{name}")


def _sql(name: str, severity: str, repair: bool, when: Callable[[Any], bool] = lambda rt: True) -> Check:
    return Check(name, severity, _sql_check(name), _sql_repair(name) if repair else None, when)


# -- checks that need Python ------------------------------------------------------------------------
def _keyed_tables(rt: Runtime) -> list[tuple[str, str]]:
    need = {"id", "scope_key", *IDENTITY_KEYS}
    return [t for t, cols in table_columns(rt.db).items() if need <= set(cols) and t[0] == "main"]


def find_scope_key_mismatch(rt: Runtime) -> Rows:
    out: Rows = []
    for schema, table in _keyed_tables(rt):
        sql = load_sql("queries/doctor/scope_key_mismatch").replace("/*TABLE*/", relation(schema, table))
        out += [(table, r[0], r[1]) for r in rt.db.rows("doctor:scope_key_mismatch", sql=sql)]
    return out


def repair_scope_key_mismatch(rt: Runtime) -> None:
    for schema, table in _keyed_tables(rt):
        sql = load_sql("queries/doctor/repair_scope_key_mismatch").replace("/*TABLE*/", relation(schema, table))
        rt.db.run("doctor:repair_scope_key_mismatch", sql=sql)


def find_embedding_dim(rt: Runtime) -> Rows:
    """The embedding columns' declared size must equal the store's and the embedder's dimension."""
    out: Rows = []
    stored = rt.db.meta("dim")
    for (schema, table), cols in table_columns(rt.db).items():
        dtype = cols.get("embedding")
        if schema != "main" or not dtype:
            continue
        size = dtype[dtype.rfind("[") + 1:-1] if dtype.endswith("]") else ""
        if size != str(stored) or int(stored or 0) != int(rt.embedder.dim):
            out.append((table, None,
                        f"embedding column is {dtype}; store dim {stored}, embedder dim {rt.embedder.dim}"))
    return out


def repair_bad_embeddings(rt: Runtime) -> None:
    rows = rt.db.rows("queries/doctor/bad_embedding_texts")
    if not rows:
        return
    vecs = rt.embedder.embed([r[1] for r in rows])
    with registered(rt.db, "reembed", vectors_table(vecs, rt.db.dim, id=[r[0] for r in rows])):
        rt.db.run("queries/doctor/repair_bad_embeddings")


def _exports(rt: Runtime) -> list[tuple[str, str, str]]:
    return [tuple(r) for r in rt.db.rows("queries/list_exports")]


def find_missing_exports(rt: Runtime) -> Rows:
    return [("exports", eid, f"registered export {path} does not exist")
            for eid, path, _ in _exports(rt) if not Path(path).is_dir()]


def repair_missing_exports(rt: Runtime) -> None:
    gone = [eid for eid, path, _ in _exports(rt) if not Path(path).is_dir()]
    with registered(rt.db, "gone", pa.table({"id": pa.array(gone, pa.string())})):
        rt.db.run("queries/doctor/unregister_missing_exports")


def find_export_checksums(rt: Runtime) -> Rows:
    """Files listed in an export manifest must exist with the listed sha256."""
    from memstore.analysis.manifest import sha256_file

    out: Rows = []
    for eid, path, _ in _exports(rt):
        manifest = Path(path) / "manifest.json"
        if not manifest.is_file():
            if Path(path).is_dir():
                out.append(("exports", eid, f"{manifest} is missing"))
            continue
        for f in json.loads(manifest.read_text(encoding="utf-8")).get("files", []):
            file = Path(path) / f.get("path", "")
            if not file.is_file():
                out.append(("exports", eid, f"{file} listed in the manifest is missing"))
            elif f.get("sha256") and sha256_file(file) != f["sha256"]:
                out.append(("exports", eid, f"{file} does not match its manifest sha256"))
    return out


def _leftovers(rt: Runtime) -> list[Path]:
    found: list[Path] = []
    if rt.db.path != ":memory:":
        base = Path(rt.db.path)
        found += [p for p in base.parent.glob(base.name + ".rewrite-tmp*") if p.is_file()]
    for _eid, path, _ in _exports(rt):
        if Path(path).is_dir():
            found += [p for p in Path(path).rglob("*.erase-tmp") if p.is_file()]
    return found


def find_leftover_files(rt: Runtime) -> Rows:
    """Temporary files an interrupted erasure left (they may hold erased bytes)."""
    return [("files", str(p), "temporary file left by an interrupted rewrite") for p in _leftovers(rt)]


def repair_leftover_files(rt: Runtime) -> None:
    from memstore.governance.scrub_files import remove_scrubbing

    for p in _leftovers(rt):
        remove_scrubbing(p)


def find_pending_erasures(rt: Runtime) -> Rows:
    from memstore.governance.erasure_journal import pending_erasures

    return [tuple(r) for r in rt.db.rows("queries/doctor/pending_erasures")] if pending_erasures(rt.db) else []


def find_pending_downstream(rt: Runtime) -> Rows:
    """Erasures not yet finished in a downstream copy (the lake; see governance/downstream.py)."""
    from memstore.governance.downstream import pending

    return [tuple(r) for r in rt.db.rows("queries/doctor/pending_downstream_erasures")] if pending(rt.db) else []


def repair_pending_erasures(rt: Runtime) -> None:
    """Runs outside the repair transaction (it rewrites the file): see run_doctor."""


def _history_on(rt: Runtime) -> bool:
    from memstore.store.history import keeps_history

    return keeps_history(rt.config.history)


# Repairs run in this order (scope keys before the postings that copy them, postings before entities).
CHECKS: tuple[Check, ...] = (
    Check("pending_erasures", "error", find_pending_erasures, repair_pending_erasures),
    Check("pending_downstream_erasures", "error", find_pending_downstream, repair_pending_erasures),
    Check("embedding_dimension", "error", find_embedding_dim),
    Check("bad_embeddings", "error", _sql_check("bad_embeddings"), repair_bad_embeddings),
    _sql("missing_identity", "error", repair=False),
    _sql("duplicate_ids", "error", repair=True),
    Check("scope_key_mismatch", "error", find_scope_key_mismatch, repair_scope_key_mismatch),
    _sql("orphan_entity_postings", "error", repair=True),
    _sql("orphan_keyword_postings", "error", repair=True),
    _sql("orphan_links", "error", repair=True),
    _sql("posting_unknown_entity", "error", repair=True),
    _sql("scope_mismatch", "error", repair=True),
    _sql("cross_scope_links", "error", repair=True),
    _sql("duplicate_postings", "error", repair=True),
    _sql("orphan_entities", "warning", repair=True),
    _sql("dangling_superseded_by", "error", repair=True),
    _sql("doc_len_mismatch", "error", repair=True),
    _sql("missing_add_history", "error", repair=False, when=_history_on),
    _sql("duplicate_current_hash", "warning", repair=False),
    _sql("unverified_receipts", "warning", repair=False),
    Check("missing_exports", "warning", find_missing_exports, repair_missing_exports),
    Check("export_checksums", "error", find_export_checksums),
    Check("leftover_files", "warning", find_leftover_files, repair_leftover_files),
)


def find_violations(rt: Runtime, checks: tuple[Check, ...] = CHECKS) -> list[dict[str, Any]]:
    """Every violation of every applicable check, as dicts (the frame's rows)."""
    out = []
    for c in checks:
        if not c.when(rt):
            continue
        for table, row_id, detail in c.find(rt):
            out.append({"check": c.name, "severity": c.severity, "table": table,
                        "row_id": None if row_id is None else str(row_id), "detail": detail,
                        "repairable": c.repair is not None, "repaired": False})
    return out


def run_doctor(rt: Runtime, *, repair: bool = False, checks: tuple[Check, ...] = CHECKS) -> pl.DataFrame:
    """Run the checks; with `repair`, fix what is safe (one transaction per pass) and mark what got
    fixed. A repair can expose the next violation (postings of a missing memory gone → their
    entity is orphaned), so repairs run again, up to three passes, on what surfaced."""
    def key(v: dict[str, Any]) -> tuple:
        return (v["check"], v["table"], v["row_id"], v["detail"])

    found = find_violations(rt, checks)
    if not repair:
        return pl.DataFrame(found, schema=COLUMNS)
    if any(v["check"] in ("pending_erasures", "pending_downstream_erasures") for v in found):
        from memstore.governance.forget_scope import finish_pending

        finish_pending(rt.db, raise_errors=False)   # its own transactions and rewrite
    seen = {key(v): v for v in found}
    current = found
    for _ in range(3):
        failing = {v["check"] for v in current if v["repairable"]}
        if not failing:
            break
        with write_unit(rt.db, "doctor:repair"):
            for c in checks:
                if c.name in failing and c.repair is not None:
                    c.repair(rt)
        current = find_violations(rt, checks)
        for v in current:
            seen.setdefault(key(v), v)
    still = {key(v) for v in current}
    for k, v in seen.items():
        v["repaired"] = v["repairable"] and k not in still
    return pl.DataFrame(list(seen.values()), schema=COLUMNS)


def assert_store_healthy(memory: Any, *, warnings: bool = False) -> None:
    """For tests: raise AssertionError listing the violations (errors; also warnings if asked).

    >>> # from memstore.governance.doctor import assert_store_healthy; assert_store_healthy(m)
    """
    frame = memory.doctor()      # the embedded Memory or the HTTP client: both answer the same frame
    if not warnings:
        frame = frame.filter(pl.col("severity") == "error")
    if frame.height:
        with pl.Config(tbl_rows=50, fmt_str_lengths=120, tbl_width_chars=200):
            raise AssertionError(f"store {memory.path} violates {frame.height} invariant(s):\n{frame}")
