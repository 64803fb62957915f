"""The journal that makes erasure resumable: a pending row in the database, a sealed sidecar file.

forget() deletes a scope's rows and, in the SAME transaction, inserts a `pending_erasures` row
(the scope only as its keyed hash, see receipt_key.py). Finishing needs things that are personal:
the scope itself (to filter Parquet exports) and the strings to look for in the bytes. Those go to
`<store>.erasure-<id>`, sealed (encrypted and authenticated) under the receipt key, which lives
outside the database file, written and fsynced before the COMMIT. So after a crash:

- row + sidecar: the deletes committed, the erasure is unfinished -> the next open finishes it;
- sidecar, no row: the transaction never committed -> nothing was deleted, the sidecar is scrubbed;
- row, no sidecar (or a key that cannot open it): the rewrite and receipt can still be done, the
  exports and the byte scan cannot -> the receipt says so (verified=False).

The seal is HMAC-SHA256 in counter mode (keystream) plus an HMAC-SHA256 tag over nonce and
ciphertext, both keys derived from the receipt key: only the standard library is needed.

>>> sealed = seal(b"k" * 32, {"scope": {"user_id": "alice"}})
>>> b"alice" in sealed, unseal(b"k" * 32, sealed)
(False, {'scope': {'user_id': 'alice'}})
>>> unseal(b"other", sealed) is None
True
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.governance.scrub_files import fsync_path, remove_scrubbing

if TYPE_CHECKING:
    from memstore.store.database import Database

_MEMORY_SIDECARS: dict[str, bytes] = {}      # in-memory stores keep their sidecar in the process


def _keys(key: bytes) -> tuple[bytes, bytes]:
    enc = hmac.new(key, b"memstore-erasure-journal:enc", hashlib.sha256).digest()
    mac = hmac.new(key, b"memstore-erasure-journal:mac", hashlib.sha256).digest()
    return enc, mac


def _keystream(enc: bytes, nonce: bytes, n: int) -> bytes:
    out = bytearray()
    block = 0
    while len(out) < n:
        out += hmac.new(enc, nonce + block.to_bytes(8, "big"), hashlib.sha256).digest()
        block += 1
    return bytes(out[:n])


def seal(key: bytes, obj: Any) -> bytes:
    """JSON of `obj`, encrypted and authenticated under `key` (see module doc)."""
    enc, mac = _keys(key)
    plain = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    nonce = secrets.token_bytes(16)
    ct = bytes(a ^ b for a, b in zip(plain, _keystream(enc, nonce, len(plain))))
    tag = hmac.new(mac, nonce + ct, hashlib.sha256).digest()
    return b"MSEJ1" + nonce + tag + ct


def unseal(key: bytes, data: bytes) -> Any | None:
    """The object `seal` sealed, or None when the key is not the one it was sealed with (or the
    data was altered)."""
    if not data.startswith(b"MSEJ1") or len(data) < 53:
        return None
    nonce, tag, ct = data[5:21], data[21:53], data[53:]
    enc, mac = _keys(key)
    if not hmac.compare_digest(tag, hmac.new(mac, nonce + ct, hashlib.sha256).digest()):
        return None
    plain = bytes(a ^ b for a, b in zip(ct, _keystream(enc, nonce, len(ct))))
    return json.loads(plain.decode("utf-8"))


def sidecar_path(db_path: str, erasure_id: str) -> str:
    """Where an erasure's sealed sidecar lives: beside the store."""
    return f"{db_path}.erasure-{erasure_id}"


def write_sidecar(db_path: str, erasure_id: str, key: bytes, payload: dict[str, Any]) -> None:
    """Seal `payload` into the sidecar and make it durable (file and directory fsynced)."""
    data = seal(key, payload)
    if db_path == ":memory:":
        _MEMORY_SIDECARS[erasure_id] = data
        return
    write_durable(sidecar_path(db_path, erasure_id), data)


def write_durable(path: str, data: bytes) -> None:
    """The one writer of sealed sidecars (this journal's and the downstream copies',
    governance/downstream.py): create `path` (mode 0600, never over an existing file), write
    `data`, fsync the file, then fsync its directory so the new name survives a crash too (a
    sidecar whose name is lost leaves its erasure pending for good)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def read_sidecar(db_path: str, erasure_id: str, key: bytes) -> dict[str, Any] | None:
    """The sealed payload of an erasure, None when missing or not openable with `key`."""
    if db_path == ":memory:":
        data = _MEMORY_SIDECARS.get(erasure_id)
    else:
        try:
            data = Path(sidecar_path(db_path, erasure_id)).read_bytes()
        except OSError:
            data = None
    return unseal(key, data) if data else None


def remove_sidecar(db_path: str, erasure_id: str) -> None:
    """Zero and delete an erasure's sidecar (after its receipt is stored, or when it never committed)."""
    if db_path == ":memory:":
        _MEMORY_SIDECARS.pop(erasure_id, None)
        return
    remove_scrubbing(sidecar_path(db_path, erasure_id))


def sidecar_ids(db_path: str) -> list[str]:
    """Erasure ids that have a sidecar beside the store."""
    if db_path == ":memory:":
        return list(_MEMORY_SIDECARS)
    folder = os.path.dirname(os.path.abspath(db_path))
    prefix = os.path.basename(db_path) + ".erasure-"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n[len(prefix):] for n in names if n.startswith(prefix) and os.path.isfile(os.path.join(folder, n)))


def pending_erasures(db: Database) -> list[dict[str, Any]]:
    """Unfinished erasures (rows of pending_erasures), JSON columns decoded; [] before the migration."""
    if "pending_erasures" not in {t for (s, t) in _tables(db)}:
        return []
    rows = db.dicts("queries/list_pending_erasures")
    for r in rows:
        for k in ("rows_removed", "untouched", "timings_ms"):
            if isinstance(r[k], str):
                r[k] = json.loads(r[k])
    return rows


def drop_orphan_sidecars(db: Database) -> list[str]:
    """Scrub sidecars whose erasure never committed or whose receipt is already stored."""
    pending = {r["id"] for r in pending_erasures(db)}
    gone = []
    for eid in sidecar_ids(db.path):
        if eid not in pending:
            remove_sidecar(db.path, eid)
            gone.append(eid)
    return gone


def _tables(db: Database) -> set[tuple[str, str]]:
    return {tuple(r) for r in db.rows("erasure:tables",
                                      sql="SELECT schema_name, table_name FROM duckdb_tables() "
                                          "WHERE database_name = current_database()")}


def _fsync_dir(path: str) -> None:
    try:
        fsync_path(path)
    except OSError:
        pass
