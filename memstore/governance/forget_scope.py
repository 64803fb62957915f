"""forget(): erase a scope everywhere, make its bytes unrecoverable, prove it, keep a receipt.

erase rows (ONE transaction) → rewrite Parquet exports → rewrite the database file → verify
(byte scan + row counts) → store the receipt (no personal content; the scope as a keyed hash).
"""
from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import time
from typing import Any

from memstore.errors import MemstoreError
from memstore.governance.erase_exports import erase_exports
from memstore.governance.erase_scope import erase_scope
from memstore.governance.receipt_key import key_fingerprint, load_receipt_key, scope_hash
from memstore.governance.rewrite_database import RewriteError, rewrite_database
from memstore.governance.verify_erasure import verify_erasure
from memstore.identity import IDENTITY_KEYS
from memstore.ids import new_id

_EPHEMERAL_KEY = secrets.token_bytes(32)   # in-memory stores without MEMSTORE_RECEIPT_KEY


class ErasureIncompleteError(MemstoreError):
    """The scope's rows are deleted but the file could not be rewritten, so old bytes may remain.
    The receipt (verified=False) is stored and attached as `.receipt`."""

    def __init__(self, message: str, *, receipt: dict[str, Any], hint: str = "") -> None:
        self.receipt = receipt
        super().__init__(message, hint=hint, receipt_id=receipt["id"])


def mask_identity_segments(path: str) -> str:
    """Hide identity values that a partitioned export put in a path.

    >>> mask_identity_segments("/x/memories/user_id=alice/part-0.parquet")
    '/x/memories/user_id=<erased>/part-0.parquet'
    """
    return re.sub(r"(?<=[/\\])(" + "|".join(IDENTITY_KEYS) + r")=[^/\\]*", r"\1=<erased>", path)


def receipt_key(db_path: str) -> bytes:
    """The store's receipt key (see receipt_key.py); a per-process key for in-memory stores."""
    return load_receipt_key(db_path) or _EPHEMERAL_KEY


def forget_scope(rt: Any, scope: dict[str, str], *, actor_id: str | None = None, scrub: bool = True) -> dict[str, Any]:
    """Erase `scope` ({"user_id": ...} etc.) and return the stored receipt (see module doc)."""
    db = rt.db
    requested = _now()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    erased = erase_scope(rt, scope)
    timings["delete"] = _ms(t)
    t = time.perf_counter()
    exports = erase_exports(db, scope, erased.memory_ids, erased.entity_ids, erased.needles)
    timings["exports"] = _ms(t)
    t = time.perf_counter()
    failure: RewriteError | None = None
    try:
        rewrite = rewrite_database(db) if scrub else {"method": "skipped"}
    except RewriteError as exc:
        failure, rewrite = exc, {"method": "rewrite_failed"}
    timings["rewrite"] = _ms(t)
    t = time.perf_counter()
    verification = verify_erasure(db, scope, erased.needles, export_files=exports.all_files,
                                  export_live=exports.live, export_rows_left=exports.rows_left)
    timings["verify"] = _ms(t)
    timings["total"] = round(sum(timings.values()), 1)
    verification["hits"] = {mask_identity_segments(f): n for f, n in verification["hits"].items()}
    verification["scope_rows_left"] = {mask_identity_segments(f): n for f, n in verification["scope_rows_left"].items()}
    verification["untouched_tables"] = erased.untouched
    verification["export_problems"] = [mask_identity_segments(p) for p in exports.problems]
    verification["bytes_before"] = rewrite.get("bytes_before")
    verification["bytes_after"] = rewrite.get("bytes_after")
    if exports.problems:
        verification["ok"] = False              # an export that could not be read or rewritten
    if failure is not None:
        verification["ok"] = False
        verification["rewrite_error"] = str(failure.__cause__ or failure)[:500]
    key = receipt_key(db.path)
    files = [dict(f, path=mask_identity_segments(f["path"])) for f in exports.files]
    receipt = {
        "id": new_id(), "scope_hash": scope_hash(key, scope), "scope_keys": sorted(scope),
        "key_id": key_fingerprint(key), "requested_at": requested, "completed_at": _now(), "actor_id": actor_id,
        "rows_removed": dict(sorted(erased.rows_removed.items())), "files_rewritten": files,
        "method": rewrite["method"], "verified": bool(verification["ok"]), "verification": verification,
        "timings_ms": timings}
    with db.transaction("forget:receipt"):
        db.run("queries/insert_receipt", {
            **receipt, "rows_removed": json.dumps(receipt["rows_removed"]),
            "files_rewritten": json.dumps(files), "verification": json.dumps(verification),
            "timings_ms": json.dumps(timings)})
    if failure is not None:
        raise ErasureIncompleteError(f"erasure receipt {receipt['id']}: rows deleted, file not rewritten: {failure}",
                                     receipt=receipt) from failure
    return receipt


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)
