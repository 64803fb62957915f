"""Erasure that reaches the store's downstream copies (the lake): the seam forget() calls.

A store that publishes somewhere says so in store_meta (`downstream:<target>` = JSON settings,
written by the publisher, see memstore/lake/). forget() then:

1. `journal(db, erasure_id, scope_hash, key, payload)` — inside the delete transaction: one
   `downstream_erasures` row per target, the payload (scope, erased entity ids, needles) sealed
   beside the store as `<store>.downstream-<id>` (see erasure_journal.seal);
2. `finish(db, erasure_id)` — after the store's own rewrite: each target's registered finisher
   erases there and returns its verification; the row is marked done and the sidecar scrubbed. A
   target that cannot be reached (or whose code is not loaded in this process) stays pending;
   the publisher finishes it before its next publish, and `memstore doctor` lists it; the
   erasure's receipt (stored with `verified=False` meanwhile) is then settled: it gains the copy's
   verification and is verified when the store's own check and every copy's passed.

Writes here touch only `store_meta`, `downstream_erasures` and `erasure_receipts`, which no cache
holds, so they run autocommitted without `writes=True` (which would drop the scope cache under a
write unit in flight on another thread, e.g. a served store's publisher thread).

Finishers are registered by the module that owns the target (`register("lake", fn)`), so this
module imports nothing above governance. Which module that is, is known here by the target's kind
(`KINDS`, a module name, not an import): whatever process runs forget() — the library, `memstore
serve` with or without `--publish-to`, a front, the rebalance tool, the CLI — loads the finisher
of every target the store names when it needs it (`finisher_for`), so an erasure never depends on
what the process happened to import. A kind this code does not know, or whose module cannot be
loaded (the `lake` extra not installed), leaves the erasure pending with that reason.

>>> register("doc-target", lambda db, settings, payload: {"ok": True})
>>> "doc-target" in FINISHERS
True
"""
from __future__ import annotations

import contextlib
import importlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.core.errors import MemstoreError
from memstore.core.ids import new_id
from memstore.core.timeutil import utcnow
from memstore.governance.erasure_journal import seal, unseal, write_durable
from memstore.governance.scrub_files import remove_scrubbing

if TYPE_CHECKING:
    from memstore.store.database import Database

Finisher = Callable[["Database", dict[str, Any], dict[str, Any]], dict[str, Any]]
FINISHERS: dict[str, Finisher] = {}
# target kind -> the module that registers its finisher when imported (a plugin named by its module,
# so governance keeps pointing down: it never imports the surfaces that own a target)
KINDS: dict[str, str] = {"lake": "memstore.lake"}
_FINISHING = threading.Lock()       # forget() and a publisher thread never finish the same row at once


def register(target: str, finisher: Finisher) -> None:
    """Let `finisher(db, settings, payload) -> verification` erase a scope from `target`. It raises
    a MemstoreError when it cannot (the erasure then stays pending)."""
    FINISHERS[target] = finisher


def kind_of(target: str, settings: dict[str, Any] | None) -> str:
    """The kind of a target (its settings may say; else the target's name is its kind)."""
    kind = (settings or {}).get("kind")
    return kind if isinstance(kind, str) and kind else target


def finisher_for(target: str, settings: dict[str, Any] | None = None) -> tuple[Finisher | None, str | None]:
    """(the finisher of `target`, None) — loading its module by kind when no finisher is
    registered yet — or (None, why it cannot be had)."""
    kind = kind_of(target, settings)
    if kind in FINISHERS:
        return FINISHERS[kind], None
    module = KINDS.get(kind)
    if module is None:
        return None, (f"target {target!r} is of kind {kind!r}, which this memstore cannot erase "
                      f"(known kinds: {', '.join(sorted(KINDS))}); upgrade memstore where forget() runs")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return None, (f"the eraser of target {target!r} ({module}) cannot be loaded in this process: "
                      f"{type(exc).__name__}: {exc} (pip install 'memstore[{kind}]')")[:500]
    if kind not in FINISHERS:
        return None, f"{module} did not register an eraser for kind {kind!r}"
    return FINISHERS[kind], None


def targets(db: Database) -> dict[str, dict[str, Any]]:
    """{target: settings} of the downstream copies this store publishes to."""
    if db.path == ":memory:" or "downstream_erasures" not in _tables(db):
        return {}
    return {t: json.loads(v) for t, v in db.rows("queries/downstream_targets")}


def set_target(db: Database, target: str, settings: dict[str, Any] | None) -> None:
    """Record (or, with None, forget) that this store publishes to `target`."""
    if settings is None:
        db.run("downstream:unset", {"key": f"downstream:{target}"}, writes=False,
               sql="DELETE FROM store_meta WHERE key = $key")
        return
    db.run("queries/set_store_meta", {"key": f"downstream:{target}", "value": json.dumps(settings, sort_keys=True)},
           writes=False)


def sidecar_path(db_path: str, row_id: str) -> str:
    return f"{db_path}.downstream-{row_id}"


def journal(db: Database, erasure_id: str, scope_hash: str, key: bytes, payload: dict[str, Any]) -> list[str]:
    """Inside forget()'s transaction: a pending row and sealed sidecar per target; the sidecar
    paths written (the caller scrubs them if the transaction rolls back)."""
    written = []
    for target in targets(db):
        row_id = new_id()
        path = sidecar_path(db.path, row_id)
        write_durable(path, seal(key, payload))
        written.append(path)
        db.run("queries/insert_downstream_erasure", writes=False, params={
            "id": row_id, "erasure_id": erasure_id, "target": target, "scope_hash": scope_hash,
            "requested_at": utcnow()})
    return written


def pending(db: Database, target: str | None = None) -> list[dict[str, Any]]:
    """Pending downstream erasures (of one target, or all)."""
    if db.path == ":memory:" or "downstream_erasures" not in _tables(db):
        return []
    return [r for r in db.dicts("queries/list_downstream_erasures")
            if r["status"] == "pending" and (target is None or r["target"] == target)]


def finish(db: Database, key: bytes, *, erasure_id: str | None = None,
           target: str | None = None) -> dict[str, dict[str, Any]]:
    """Finish pending downstream erasures (those of `erasure_id`, or all of `target`, or all);
    returns {target: verification} — `{"pending": True, "error": ...}` for one that could not."""
    with _FINISHING:
        return _finish(db, key, erasure_id, target)


def _finish(db: Database, key: bytes, erasure_id: str | None, target: str | None) -> dict[str, dict[str, Any]]:
    settings = targets(db)
    out: dict[str, dict[str, Any]] = {}
    for row in pending(db, target):
        if erasure_id is not None and row["erasure_id"] != erasure_id:
            continue
        name = row["target"]
        path = sidecar_path(db.path, row["id"])
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = b""
        payload = unseal(key, data) if data else None
        finisher, error = None, None
        if name not in settings:
            error = f"the store no longer names target {name!r} (store_meta downstream:{name})"
        elif payload is None:
            error = "the sealed sidecar is missing or was sealed with another receipt key"
        else:
            finisher, error = finisher_for(name, settings[name])
        if error is None and finisher is not None:
            try:
                result = finisher(db, settings[name], payload)
            except Exception as exc:
                error = (str(exc) if isinstance(exc, MemstoreError) else f"{type(exc).__name__}: {exc}")[:500]
        if error is not None:
            with contextlib.suppress(MemstoreError):
                db.run("queries/fail_downstream_erasure", {"id": row["id"], "error": error}, writes=False)
            out[name] = {"pending": True, "error": error, "id": row["id"]}
            continue
        db.run("queries/finish_downstream_erasure", writes=False, params={
            "id": row["id"], "finished_at": utcnow(), "verification": json.dumps(result, default=str)})
        remove_scrubbing(path)
        out[name] = dict(result, id=row["id"])
        settle_receipt(db, row["erasure_id"], name, out[name])
    return out


def settle_receipt(db: Database, erasure_id: str, target: str, result: dict[str, Any]) -> bool | None:
    """A copy finished after the erasure's receipt was stored (the lake was down at forget()):
    put its result in the receipt and recompute `verified` — the store's own check (`store_ok`)
    and every copy's. The new `verified`; None when there is no receipt yet (forget() is still
    finishing: it writes the copies' results itself) or it predates `store_ok`."""
    rows = db.rows("queries/receipt_verification", {"id": erasure_id})
    if not rows:
        return None
    verification = json.loads(rows[0][0]) if isinstance(rows[0][0], str) else dict(rows[0][0])
    verification.setdefault("downstream", {})[target] = result
    if "store_ok" not in verification:
        return None
    ok = bool(verification["store_ok"]) and all(c.get("ok") and not c.get("pending")
                                                for c in verification["downstream"].values())
    verification["ok"] = ok
    db.run("queries/settle_receipt", {"id": erasure_id, "verified": ok,
                                      "verification": json.dumps(verification, default=str)}, writes=False)
    return ok


def _tables(db: Database) -> set[str]:
    return {r[0] for r in db.rows("downstream:tables", sql="SELECT table_name FROM duckdb_tables() "
                                                           "WHERE database_name = current_database()")}

