"""Who is calling the server: the admin token or a stored token with a scope, checked per request.

- The admin token (`<store>.server-token` or $MEMSTORE_TOKEN, made at first start) opens
  everything, as before.
- A stored token (`memstore token create`, memstore/governance/api_tokens.py) is looked up by its
  sha256 in an in-memory copy of `api_tokens` and compared in constant time (hmac.compare_digest);
  the copy is reloaded after every call through this server that may change the tokens (create,
  revoke, forget, reset, ...), so a revocation holds from the next request on. While a server
  runs it owns the store file, so no other process can change the table behind its back. Expiry
  is checked against the clock on every request. Tokens are never logged.
- Last use is kept in memory and written at most once a minute per server (a background thread),
  and before `list_tokens`.

`Access` is the glue the app uses: `authenticate(header)` sets the request's grant (a context
variable, which FastAPI's worker threads inherit) and `guard(memory)` gives the memory every route
calls (memstore/server/scoped_memory.py applies the grant). MCP over HTTP gets an explicit grant
per request instead (its tools run in the session's task, not the request's): `mcp_authorize`.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "a.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> tok = m.create_token("ro", user_id="alice", read_only=True)["token"]
>>> access = Access(m, admin_token="s3cret")
>>> access.verify("Bearer s3cret").admin, access.verify(f"Bearer {tok}")
(True, Grant('ro', {'user_id': 'alice'}, read_only=True))
>>> access.verify("Bearer nope")
Traceback (most recent call last):
...
memstore.core.errors.AuthError: missing or wrong bearer token — send `Authorization: Bearer <token>`: the admin token is in <store>.server-token on the server's machine; a scoped token comes from `memstore token create`
>>> m.close()
"""
from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import hmac
import logging
import threading
import time
from typing import Any

from memstore.core.errors import AuthError, ConfigError, MemstoreError, NotFoundError, TokenRightsError
from memstore.core.scope_rule import canonical_id, same_id
from memstore.server.scoped_memory import ADMIN, Grant, GuardedMemory

log = logging.getLogger(__name__)

WRONG_TOKEN_HINT = ("send `Authorization: Bearer <token>`: the admin token is in <store>.server-token on the "
                    "server's machine; a scoped token comes from `memstore token create`")
USE_FLUSH_S = 60.0          # last-used stamps reach the table at most this often

_GRANT: contextvars.ContextVar[Grant | None] = contextvars.ContextVar("memstore_grant", default=None)


class _Known:
    """One stored token as the check needs it (hash as bytes, expiry as epoch seconds)."""

    __slots__ = ("digest", "grant", "expires", "expires_text")

    def __init__(self, digest: str, grant: Grant, expires_at: dt.datetime | None) -> None:
        self.digest = digest.encode("ascii")
        self.grant = grant
        self.expires = expires_at.replace(tzinfo=dt.timezone.utc).timestamp() if expires_at else None
        self.expires_text = f"{expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else ""


class Access:
    """Authentication and scope enforcement of one server (see the module docstring)."""

    def __init__(self, memory: Any, admin_token: str | None) -> None:
        self._db = getattr(memory, "db", None)          # an embedded Memory; None: no stored tokens
        self._admin = admin_token.encode("utf-8") if admin_token is not None else None
        self._known: dict[str, _Known] | None = None
        self._generation = 0                            # bumped by invalidate(): a reload older than it is dropped
        self._lock = threading.Lock()
        self._used: dict[str, float] = {}               # name -> epoch seconds, not yet written
        self._last_flush = time.monotonic()
        self._flushing = False
        if self._admin is not None and hashlib.sha256(self._admin).hexdigest() in self._tokens():
            raise ConfigError("the server's admin token is one of the store's scoped tokens (is $MEMSTORE_TOKEN "
                              "set to a token from `memstore token create`?)",
                              hint="unset $MEMSTORE_TOKEN for `memstore serve` (the admin token is then "
                                   "<store>.server-token), or set it to a secret of its own", key="MEMSTORE_TOKEN")

    @property
    def enabled(self) -> bool:
        return self._admin is not None

    # -- tokens ------------------------------------------------------------------------------------
    def _tokens(self) -> dict[str, _Known]:
        known = self._known
        if known is None:
            from memstore.governance.api_tokens import load_tokens

            with self._lock:
                generation = self._generation
                known = {} if self._db is None else {
                    h: _Known(h, Grant(t.name, t.scope, read_only=t.read_only), t.expires_at)
                    for h, t in load_tokens(self._db).items()}
                if generation == self._generation:      # no change landed while we read: keep the copy
                    self._known = known
        return known

    def invalidate(self) -> None:
        """Forget the in-memory copy of the tokens: the next request reads the table again."""
        self._generation += 1
        self._known = None

    def verify(self, authorization: str) -> Grant:
        """The grant of an `Authorization` header value; AuthError when it opens nothing."""
        if self._admin is None:
            return ADMIN
        scheme, _, value = authorization.partition(" ")
        given = value.strip().encode("utf-8")
        if scheme.lower() not in ("bearer", "token") or not given:    # Token: mem0's platform SDKs
            raise AuthError("missing or wrong bearer token", hint=WRONG_TOKEN_HINT)
        if hmac.compare_digest(given, self._admin):
            return ADMIN
        digest = hashlib.sha256(given).hexdigest()
        known = self._tokens().get(digest)
        if known is None or not hmac.compare_digest(known.digest, digest.encode("ascii")):
            raise AuthError("missing or wrong bearer token", hint=WRONG_TOKEN_HINT)
        now = time.time()
        if known.expires is not None and now >= known.expires:
            raise AuthError(f"token {known.grant.name!r} expired at {known.expires_text}",
                            hint="ask the operator for a new one: memstore token create")
        self._used[known.grant.name] = now
        if not self._flushing and time.monotonic() - self._last_flush >= USE_FLUSH_S:
            self._flush_soon()
        return known.grant

    # -- last use ------------------------------------------------------------------------------------
    def _flush_soon(self) -> None:
        self._flushing = True
        threading.Thread(target=self.flush_use, name="memstore-token-use", daemon=True).start()

    def flush_use(self) -> None:
        """Write the collected last-use times (best effort: a failure is logged, requests go on)."""
        from memstore.governance.api_tokens import record_use

        self._last_flush = time.monotonic()
        used, self._used = self._used, {}
        try:
            if used and self._db is not None:
                record_use(self._db, {n: dt.datetime.fromtimestamp(t, dt.timezone.utc).replace(tzinfo=None)
                                      for n, t in used.items()})
        except MemstoreError as exc:        # a stamp is not worth failing a request or the server for
            log.warning("could not record token use: %s", exc)
        finally:
            self._flushing = False

    # -- the app's view ------------------------------------------------------------------------------
    def authenticate(self, authorization: str) -> Grant:
        """Check the header and make its grant the current request's (see `guard`)."""
        _GRANT.set(None)
        grant = self.verify(authorization)
        _GRANT.set(grant)
        return grant

    def scoped(self) -> bool:
        """True when the current request carries a scoped token (its scope fills missing identity)."""
        grant = _GRANT.get()
        return grant is not None and not grant.admin

    def guard(self, inner: Any) -> GuardedMemory:
        """`inner` as the current request's grant may use it (admin when auth is off)."""
        default = None if self.enabled else ADMIN
        return GuardedMemory(inner, lambda: _GRANT.get() or default, on_tokens_changed=self.invalidate,
                             before_list_tokens=self.flush_use)

    def mcp_authorize(self, inner: Any) -> Any:
        """The `authorize(request, user, client)` hook of `mount_mcp`: the token decides the scope; a
        scoped token's user wins over the URL's, and a different user in the URL is refused."""
        def authorize(request: Any, user: str | None, client: str) -> tuple[dict[str, str], str, Any]:
            try:
                grant = self.verify(request.headers.get("authorization", ""))
                user = canonical_id(user, "user_id") if user and user.strip() else None   # core/scope_rule.py
                if grant.admin:
                    if not user:
                        raise _missing_user()
                    scope, actor = {"user_id": user}, f"mcp:{client}"
                else:
                    scope, actor = dict(grant.scope), grant.actor
                    if user is not None:
                        if "user_id" in scope and not same_id(user, scope["user_id"]):
                            raise NotFoundError(f"no user {user!r} for this token",
                                                hint="connect to /mcp/CLIENT/<the token's user>, or to /mcp "
                                                     "without a user: the token says whose memories these are")
                        scope["user_id"] = user
            except MemstoreError as exc:
                exc.status_code = _status(exc)      # type: ignore[attr-defined]
                raise
            return scope, actor, GuardedMemory(inner, lambda: grant, on_tokens_changed=self.invalidate,
                                               before_list_tokens=self.flush_use)
        return authorize


def _missing_user() -> MemstoreError:
    from memstore.core.errors import IdentityError

    return IdentityError("no user for this MCP endpoint",
                         hint="connect to /mcp/CLIENT/USER_ID, or send the X-Memstore-User header or ?user_id=")


def _status(exc: BaseException) -> int:
    if isinstance(exc, TokenRightsError):
        return 403
    if isinstance(exc, AuthError):
        return 401
    if isinstance(exc, NotFoundError):
        return 404
    return 400
