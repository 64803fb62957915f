"""forget(): erase a scope everywhere, make its bytes unrecoverable, prove it, keep a receipt.

erase rows + journal the erasure (ONE transaction, see erasure_journal.py) → rewrite Parquet
exports → rewrite the database file → verify (byte scan + row counts) → store the receipt and end
the journal entry (ONE transaction; no personal content: the scope as a keyed hash). A crash or a
full disk anywhere after the first transaction leaves the erasure pending; `finish_pending`
(called when a store opens, by doctor(repair=True), scrub() and the next forget()) completes it.
"""
from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from memstore.core.errors import (
    ErasureIncompleteError,
    MemstoreError,
    StoreBusyError,
    StoreFullError,
)
from memstore.core.identity import IDENTITY_KEYS
from memstore.core.ids import new_id
from memstore.core.timeutil import utcnow
from memstore.governance import downstream
from memstore.governance.erase_exports import erase_exports, names_value
from memstore.governance.erase_scope import ErasedScope, erase_scope
from memstore.governance.erasure_journal import (
    drop_orphan_sidecars,
    pending_erasures,
    read_sidecar,
    remove_sidecar,
    write_sidecar,
)
from memstore.governance.receipt_key import key_fingerprint, load_receipt_key, scope_hash
from memstore.governance.rewrite_database import RewriteError, rewrite_database
from memstore.governance.scrub_files import remove_scrubbing
from memstore.governance.verify_erasure import verify_erasure
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.database import Database

_EPHEMERAL_KEY = secrets.token_bytes(32)   # in-memory stores without MEMSTORE_RECEIPT_KEY


def mask_identity_segments(path: str, scope: dict[str, str] | None = None) -> str:
    """Hide identity values a path holds: partition segments (`user_id=alice`) and, given the
    scope, any word of the path equal to one of its values (`dsar-alice`).

    >>> mask_identity_segments("/x/memories/user_id=alice/part-0.parquet")
    '/x/memories/user_id=<erased>/part-0.parquet'
    >>> mask_identity_segments("/x/dsar-alice.v2/m.parquet", {"user_id": "alice"})
    '/x/dsar-<erased>.v2/m.parquet'
    """
    out = re.sub(r"(?<=[/\\])(" + "|".join(IDENTITY_KEYS) + r")=[^/\\]*", r"\1=<erased>", path)
    for value in (scope or {}).values():
        if value:
            out = names_value(value).sub("<erased>", out)
    return out


def receipt_key(db_path: str) -> bytes:
    """The store's receipt key (see receipt_key.py); a per-process key for in-memory stores."""
    return load_receipt_key(db_path) or _EPHEMERAL_KEY


def forget_scope(rt: Runtime, scope: dict[str, str], *, actor_id: str | None = None, scrub: bool = True) -> dict[str, Any]:
    """Erase `scope` ({"user_id": ...} etc.) and return the stored receipt (see module doc)."""
    db = rt.db
    with db.write_lock:
        finish_pending(db, raise_errors=False)     # an earlier erasure first (one rewrite covers both)
        key = receipt_key(db.path)
        row = {"id": new_id(), "scope_hash": scope_hash(key, scope), "scope_keys": sorted(scope),
               "key_id": key_fingerprint(key), "requested_at": utcnow(), "actor_id": actor_id, "scrub": bool(scrub)}
        t = time.perf_counter()
        wrote: list[str] = []
        copies: list[str] = []

        def journal(out: ErasedScope) -> None:
            """Inside the delete transaction: the sealed sidecar (durable first), then the row."""
            write_sidecar(db.path, row["id"], key, {
                "scope": scope, "needles": out.needles, "memory_ids": out.memory_ids, "entity_ids": out.entity_ids})
            wrote.append(row["id"])
            copies.extend(downstream.journal(db, row["id"], row["scope_hash"], key, {   # the lake, if published
                "scope": scope, "needles": out.needles, "entity_ids": out.entity_ids}))
            db.run("queries/insert_pending_erasure", writes=True, params={
                **row, "rows_removed": json.dumps(dict(sorted(out.rows_removed.items()))),
                "untouched": json.dumps(out.untouched), "timings_ms": json.dumps({"delete": _ms(t)})})

        try:
            erase_scope(rt, scope, before_commit=journal)
        except BaseException:
            for eid in wrote:                 # the transaction rolled back: nothing to finish
                remove_sidecar(db.path, eid)
            for path in copies:
                remove_scrubbing(path)
            raise
        pending = next(p for p in pending_erasures(db) if p["id"] == row["id"])
        return finish_erasure(db, pending, resumed=False)


def finish_pending(db: Database, *, raise_errors: bool = True) -> list[dict[str, Any]]:
    """Finish every journaled erasure (oldest first) and scrub sidecars nobody needs; returns the
    receipts stored. A read-only store cannot finish them (doctor reports them).
    With `raise_errors=False`, a failure is recorded on the journal row and the rest continue."""
    if db.read_only:
        return []
    out = []
    with db.write_lock:
        for p in pending_erasures(db):
            try:
                out.append(finish_erasure(db, p))
            except StoreBusyError:
                if raise_errors:
                    raise
                break           # the file cannot be rewritten now: the next ones would wait in vain too
            except MemstoreError:
                if raise_errors:
                    raise
        drop_orphan_sidecars(db)
        if downstream.pending(db):      # copies an earlier forget could not reach (the lake was down)
            downstream.finish(db, receipt_key(db.path))
    return out


def unfinished(verification: dict[str, Any], rewrite_error: str | None = None) -> list[dict[str, str]]:
    """What of an erasure is not finished or not proven, and why (the answer's `pending`; empty when
    `verified`): a downstream copy not reached, a copy or the store whose check found something,
    the file rewrite that failed. No personal content (file names are masked by the caller).

    >>> unfinished({"ok": False, "store_ok": True, "downstream": {"lake": {"pending": True, "error": "down"}}})[0]["reason"]
    'down; the next forget, scrub(), doctor(repair=True), open of the store or publish finishes it'
    """
    out: list[dict[str, str]] = []
    if rewrite_error:
        out.append({"part": "store", "state": "pending",
                    "reason": f"the file rewrite failed ({rewrite_error}); it is retried at the next open, "
                              "scrub() or doctor(repair=True)"})
    elif not verification.get("store_ok", verification.get("ok")):
        why = []
        if verification.get("hits"):
            why.append(f"erased strings still found in {len(verification['hits'])} file(s)")
        if verification.get("scope_rows_left"):
            why.append(f"rows of the scope left in {', '.join(sorted(verification['scope_rows_left']))}")
        if verification.get("unattributed_rows_with_needles"):
            why.append("erased strings in rows no scope owns: "
                       + ", ".join(sorted(verification["unattributed_rows_with_needles"])))
        why += list(verification.get("export_problems") or [])
        out.append({"part": "store", "state": "not_verified", "reason": "; ".join(why) or "verification failed"})
    for target, copy in sorted((verification.get("downstream") or {}).items()):
        if copy.get("pending"):
            out.append({"part": target, "state": "pending",
                        "reason": f"{copy.get('error') or 'not reached'}; the next forget, scrub(), "
                                  "doctor(repair=True), open of the store or publish finishes it"})
        elif not copy.get("ok"):
            why = list(copy.get("maintenance_errors") or [])
            hits = (copy.get("scan") or {}).get("hits")
            if hits:
                why.append(f"erased strings still found in {len(hits)} file(s) of the {target}")
            out.append({"part": target, "state": "not_verified", "reason": "; ".join(why) or "verification failed"})
    return out


def finish_erasure(db: Database, pending: dict[str, Any], *, resumed: bool = True) -> dict[str, Any]:
    """Exports, rewrite, verification, receipt for one journaled erasure (idempotent: a crash at any
    point leaves it pending and running this again completes it)."""
    eid = pending["id"]
    key = receipt_key(db.path)
    payload = read_sidecar(db.path, eid, key)
    problems: list[str] = []
    if payload is None:
        problems.append("the sealed sidecar of this erasure is missing or was sealed with another receipt key: "
                        "exports were not filtered and the byte scan had nothing to look for")
        payload = {"scope": {}, "needles": [], "memory_ids": [], "entity_ids": []}
    scope = payload["scope"]
    timings = dict(pending["timings_ms"])
    t = time.perf_counter()
    if scope:
        exports = erase_exports(db, scope, payload["memory_ids"], payload["entity_ids"], payload["needles"],
                                resumed=resumed)
    else:
        from memstore.governance.erase_exports import ExportErasure

        exports = ExportErasure()
    timings["exports"] = timings.get("exports", 0) + _ms(t)
    t = time.perf_counter()
    failure: Exception | None = None
    try:
        rewrite = rewrite_database(db) if pending["scrub"] else {"method": "skipped"}
    except StoreBusyError as exc:
        if resumed:
            raise           # nothing of this finish changed: finish_pending stops and retries later
        # the forget's deletes are committed: "busy, nothing changed" would be untrue (issue 44)
        failure, rewrite = exc, {"method": "rewrite_failed"}
    except (RewriteError, StoreFullError) as exc:
        failure, rewrite = exc, {"method": "rewrite_failed"}
    timings["rewrite"] = _ms(t)
    t = time.perf_counter()
    verification = verify_erasure(db, scope, payload["needles"], export_files=exports.all_files,
                                  export_live=exports.live, export_rows_left=exports.rows_left)
    timings["verify"] = _ms(t)
    timings["total"] = round(sum(v for k, v in timings.items() if k != "total"), 1)
    mask = lambda p: mask_identity_segments(p, scope)  # noqa: E731
    verification["hits"] = {mask(f): n for f, n in verification["hits"].items()}
    verification["scope_rows_left"] = {mask(f): n for f, n in verification["scope_rows_left"].items()}
    verification["untouched_tables"] = pending["untouched"]
    verification["export_problems"] = [mask(p) for p in exports.problems + problems]
    verification["bytes_before"] = rewrite.get("bytes_before")
    verification["bytes_after"] = rewrite.get("bytes_after")
    verification["attempts"] = int(pending.get("attempts") or 0) + 1
    if exports.problems or problems:
        verification["ok"] = False              # an export that could not be read or rewritten
    verification["store_ok"] = bool(verification["ok"])     # the store's own part (downstream settles on it)
    copies = downstream.finish(db, key, erasure_id=eid) if scope else {}
    if copies:                                  # the lake: its own deletes, rewrite, byte scan
        verification["downstream"] = copies
        verification["ok"] = bool(verification["ok"]) and all(c.get("ok") for c in copies.values())
    files = [dict(f, path=mask(f["path"])) for f in exports.files]
    receipt = {
        "id": eid, "scope_hash": pending["scope_hash"], "scope_keys": list(pending["scope_keys"]),
        "key_id": pending["key_id"], "requested_at": pending["requested_at"], "completed_at": utcnow(),
        "actor_id": pending["actor_id"], "rows_removed": dict(sorted(pending["rows_removed"].items())),
        "files_rewritten": files, "method": rewrite["method"], "verified": bool(verification["ok"]),
        "verification": verification, "timings_ms": timings}
    if failure is not None:
        receipt["verified"] = verification["ok"] = False
        reason = mask(str(failure))[:500]
        verification["rewrite_error"] = reason
        receipt["pending"] = unfinished(verification, reason)
        with contextlib.suppress(MemstoreError):      # on a full disk even this may not be writable
            with write_unit(db, "forget:attempt"):
                db.run("queries/fail_pending_erasure", {"id": eid, "error": reason})
        if isinstance(failure, StoreFullError):
            failure.receipt = receipt          # type: ignore[attr-defined]
            raise failure
        raise ErasureIncompleteError(f"erasure {eid}: rows deleted, file not rewritten: {reason}",
                                     receipt=receipt,
                                     hint="the erasure stays pending and finishes at the next open, "
                                          "doctor(repair=True) or scrub()") from failure
    with write_unit(db, "forget:receipt"):
        db.run("queries/insert_receipt", writes=True, params={
            **receipt, "rows_removed": json.dumps(receipt["rows_removed"]),
            "files_rewritten": json.dumps(files), "verification": json.dumps(verification),
            "timings_ms": json.dumps(timings)})
        db.run("queries/finish_pending_erasure", {"id": eid})
    remove_sidecar(db.path, eid)
    receipt["pending"] = unfinished(verification)     # the answer says what is not done (not stored: derived)
    return receipt



def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)
