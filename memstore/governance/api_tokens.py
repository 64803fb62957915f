"""Bearer tokens that carry a scope: create, list, revoke, and the table the server checks.

A token is `mst_` + 256 random bits (URL-safe base64). Only its sha256 is stored (`api_tokens`,
sql/schema/030_api_tokens.sql), so the store file never holds a usable credential; the clear token
is returned once, by `create_token`. A token has a name (unique; history records writes made with
it as actor `token:<name>`), a scope (user / agent / run: at least one), an optional expiry and a
read-only flag. Revoking deletes the row. Enforcement is the server's (memstore/server/auth.py).

>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=4, embedder="t")
>>> made = create_token(db, "alice-laptop", user_id="alice", expires="30d")
>>> made["token"].startswith("mst_"), made["user_id"], made["read_only"]
(True, 'alice', False)
>>> [(t["name"], t["scope"], t["rights"], t["status"]) for t in list_tokens(db)]
[('alice-laptop', 'user_id=alice', 'read-write', 'active')]
>>> stored = load_tokens(db)[hash_token(made["token"])]
>>> stored.name, stored.scope, made["token"] in str(db.rows("all", sql="SELECT * FROM api_tokens"))
('alice-laptop', {'user_id': 'alice'}, False)
>>> revoke_token(db, "alice-laptop")["revoked"], list_tokens(db)
('alice-laptop', [])
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.core.errors import InvalidInputError, NotFoundError, TokenExistsError, TokenExpiryError
from memstore.core.identity import IDENTITY_KEYS, Scope
from memstore.core.timeutil import parse_time, utcnow
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

TOKEN_PREFIX = "mst_"
ACTOR_PREFIX = "token:"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
_DURATION_RE = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class StoredToken:
    """What the server needs of one token to authenticate a request (no secret in it)."""

    name: str
    token_hash: str
    scope: dict[str, str]
    read_only: bool
    expires_at: dt.datetime | None       # naive UTC

    @property
    def actor(self) -> str:
        """The actor_id history records for writes made with this token."""
        return ACTOR_PREFIX + self.name


def hash_token(token: str) -> str:
    """The stored form of a token: sha256, hex.

    >>> hash_token("mst_x")[:12]
    'd401d1a8b3fa'
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()



def parse_expiry(value: Any, now: dt.datetime | None = None) -> dt.datetime | None:
    """`--expires`: a duration ("30d", "12h", "90m", "2w", "1d12h") from now, or a time (ISO date,
    datetime, epoch seconds); None means never.

    >>> parse_expiry("1d12h", now=dt.datetime(2026, 1, 1))
    datetime.datetime(2026, 1, 2, 12, 0)
    >>> parse_expiry("2026-03-01")
    datetime.datetime(2026, 3, 1, 0, 0)
    """
    if value is None or value == "":
        return None
    now = now or utcnow()
    if isinstance(value, str):
        text = value.strip().lower()
        parts = _DURATION_RE.findall(text)
        if parts and _DURATION_RE.sub("", text).strip() == "":
            return now + dt.timedelta(seconds=sum(int(n) * _UNIT_S[u] for n, u in parts))
    when = parse_time(value, "expires")
    return when


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name.strip()):
        raise InvalidInputError(f"token name {name!r} is not usable",
                                hint="1-64 characters: letters, digits and . _ : @ -, starting with a letter or "
                                     "digit, e.g. alice-laptop", name=str(name)[:80])
    return name.strip()


def create_token(db: Database, name: str, *, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, read_only: bool = False, expires: Any = None) -> dict[str, Any]:
    """Make a token for one scope; the returned dict holds the clear token (shown once, never stored)."""
    name = _check_name(name)
    scope = Scope.from_kwargs(user_id, agent_id, run_id).as_dict()
    expires_at = parse_expiry(expires)
    now = utcnow()
    if expires_at is not None and expires_at <= now:
        raise TokenExpiryError(f"expires {expires!r} is in the past ({expires_at:%Y-%m-%d %H:%M} UTC)",
                                hint="give a duration such as 30d or 12h, or a future date")
    if db.rows("queries/tokens/token_exists", {"name": name}):
        raise TokenExistsError(f"a token named {name!r} exists already",
                                hint=f"choose another name, or revoke it first: memstore token revoke {name}")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with write_unit(db, "create_token"):
        db.scopes_changed(())       # no scope's memories change: the scope cache stays
        db.run("queries/tokens/insert_token", {
            "name": name, "token_hash": hash_token(token), **{k: scope.get(k) for k in IDENTITY_KEYS},
            "read_only": bool(read_only), "created_at": now, "expires_at": expires_at}, writes=True)
    return {"name": name, "token": token, **scope, "read_only": bool(read_only),
            "expires_at": expires_at.isoformat(timespec="seconds") if expires_at else None,
            "actor_id": ACTOR_PREFIX + name}


def list_tokens(db: Database, *, last_used: dict[str, dt.datetime] | None = None) -> list[dict[str, Any]]:
    """Every token: name, scope, rights, created / last used / expires (ISO, UTC), status. Never the
    token or its hash. `last_used` (the server's newer, not yet written stamps) wins when newer."""
    now = utcnow()
    out = []
    for r in db.dicts("queries/tokens/list_tokens"):
        used = r["last_used_at"]
        newer = (last_used or {}).get(r["name"])
        if newer is not None and (used is None or newer > used):
            used = newer
        scope = {k: r[k] for k in IDENTITY_KEYS if r[k] is not None}
        out.append({"name": r["name"], "scope": ", ".join(f"{k}={v}" for k, v in scope.items()), **scope,
                    "rights": "read-only" if r["read_only"] else "read-write",
                    "created_at": _iso(r["created_at"]), "last_used_at": _iso(used),
                    "expires_at": _iso(r["expires_at"]),
                    "status": "expired" if r["expires_at"] is not None and r["expires_at"] <= now else "active"})
    return out


def revoke_token(db: Database, name: str) -> dict[str, Any]:
    """Delete a token by name; NotFoundError when there is none of that name."""
    with write_unit(db, "revoke_token"):
        db.scopes_changed(())
        gone = db.rows("queries/tokens/delete_token", {"name": str(name)}, writes=True)
    if not gone:
        raise NotFoundError(f"no token named {name!r}", hint="list them with `memstore token list`")
    return {"revoked": gone[0][0]}


def load_tokens(db: Database) -> dict[str, StoredToken]:
    """{sha256: StoredToken} of every stored token (expired ones too: the server says "expired")."""
    out = {}
    for r in db.dicts("queries/tokens/token_hashes"):
        out[r["token_hash"]] = StoredToken(name=r["name"], token_hash=r["token_hash"],
                                           scope={k: r[k] for k in IDENTITY_KEYS if r[k] is not None},
                                           read_only=bool(r["read_only"]), expires_at=r["expires_at"])
    return out


def record_use(db: Database, used: dict[str, dt.datetime]) -> None:
    """Write the last-used times the server collected (one small UPDATE per token)."""
    with write_unit(db, "token_use"):
        db.scopes_changed(())
        for name, when in used.items():
            db.run("queries/tokens/touch_token", {"name": name, "used_at": when}, writes=True)


def _iso(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") if isinstance(value, dt.datetime) else value
