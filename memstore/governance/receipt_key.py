"""The per-store secret that turns an erased scope into a keyed hash for its receipt.

Why a keyed hash, and why the key lives outside the database file: user ids are low-entropy
(names, e-mails, account numbers), so a plain SHA-256 of "user_id=alice" stored in the receipt is
the id in clear to anyone who can guess candidates and hash them. HMAC-SHA256 under a secret key
stops that dictionary attack for whoever holds only the database file (a backup, a copy shared with
an analyst, a Parquet export), while the operator who holds the key can still answer "was alice
erased, when, and what was removed?" by recomputing the HMAC. Keeping the key beside the store
(`<store>.receipt-key`, mode 0600) or in the environment (`MEMSTORE_RECEIPT_KEY`, which wins) and
never inside it also gives a clean last step if ever needed: deleting the key makes every receipt
anonymous (crypto-shredding) while the counts stay auditable.

>>> key = b"k" * 32
>>> scope_hash(key, {"user_id": "alice"}) == scope_hash(key, {"user_id": "alice"})
True
>>> scope_hash(key, {"user_id": "alice"}) == scope_hash(b"other-key", {"user_id": "alice"})
False
>>> len(key_fingerprint(key))
16
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

ENV_VAR = "MEMSTORE_RECEIPT_KEY"


def key_path(store_path: str) -> Path:
    """Where the key file of a store lives: beside it, `<store>.receipt-key`."""
    return Path(f"{store_path}.receipt-key")


def load_receipt_key(store_path: str, *, create: bool = True) -> bytes | None:
    """The store's receipt key: $MEMSTORE_RECEIPT_KEY if set, else the key file (created 0600 with
    32 random bytes on first use when `create`). None for an in-memory store without the env var."""
    env = os.environ.get(ENV_VAR)
    if env:
        return env.encode("utf-8")
    if store_path == ":memory:":
        return None
    path = key_path(store_path)
    if path.exists():
        return path.read_text(encoding="ascii").strip().encode("ascii")
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    return path.read_text(encoding="ascii").strip().encode("ascii")


def canonical_scope(scope: dict[str, str]) -> str:
    """Stable text of a scope: sorted JSON of the given identity keys."""
    return json.dumps({k: v for k, v in sorted(scope.items()) if v is not None}, separators=(",", ":"),
                      ensure_ascii=False)


def scope_hash(key: bytes, scope: dict[str, str]) -> str:
    """Hex HMAC-SHA256 of the canonical scope."""
    return hmac.new(key, canonical_scope(scope).encode("utf-8"), hashlib.sha256).hexdigest()


def key_fingerprint(key: bytes) -> str:
    """A short public id of the key (not the key): tells which key a receipt was made with."""
    return hashlib.sha256(b"memstore-receipt-key:" + key).hexdigest()[:16]
