"""The memory as one bearer token may see it: the server's per-call enforcement of token scopes.

`GuardedMemory(inner, grant_of)` offers the methods of `memstore.api.protocol.METHODS` (plus
`ingest_upload`, a file the client sent). For the admin grant each call goes straight through. For
a scoped grant (a token made with `memstore token create`):

- the token's scope is applied to every call: a missing identity becomes the scope, a narrower one
  (alice's token asking for agent_id="x") is kept, and identity named in `filters` is ANDed under
  it;
- an identity argument, a filter or an upload naming another scope raises NotFoundError whose text
  depends only on what was asked, never on whether that scope exists; a memory id outside the
  scope answers as an unknown id (the library's own scoped check, one lookup either way);
- writes are refused to read-only tokens, and methods that read or change more than one scope
  (METHODS' `analyst` / `admin`, and `ingest`, which reads files on the server's machine) to every
  scoped token: TokenRightsError;
- writes carry `actor_id="token:<name>"` whatever the caller sent, so history says who did them.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "g.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> bob_id = m.add("Bob keeps bees", user_id="bob", infer=False)["results"][0]["id"]
>>> alice = GuardedMemory(m, lambda: Grant(name="alice-laptop", scope={"user_id": "alice"}))
>>> mid = alice.add("I live in Lisbon", infer=False)["results"][0]["id"]
>>> [r["memory"] for r in alice.get_all()["results"]], m.history(mid)[0]["actor_id"]
(['I live in Lisbon'], 'token:alice-laptop')
>>> alice.get(bob_id)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
memstore.core.errors.NotFoundError: no memory with id '...' in this scope — ...
>>> alice.search("bees", user_id="bob")
Traceback (most recent call last):
...
memstore.core.errors.NotFoundError: no memories of user_id='bob' — this token sees one scope: leave user_id out and it is filled in
>>> m.close()
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from memstore.api.protocol import METHODS
from memstore.core.errors import AuthError, NotFoundError, TokenRightsError
from memstore.core.read_context import quiet, reading
from memstore.core.scope_rule import canonical_scope, confine_scope, filter_within

# Methods whose identity arguments (and filters) are confined to the token's scope. get / history /
# update / delete take the scope too: the library then answers an id outside it as an unknown id.
SCOPED = frozenset({"add", "search", "explain_search", "get", "get_all", "history", "update", "delete",
                    "delete_all", "timeline", "contradictions", "purge_expired", "forget", "erasure_receipts",
                    "frame", "ingest_upload", "ingest_known", "ingest_prepared"})
# Methods that record who acted (actor_id): a named token's name replaces what the caller sent.
ACTS = frozenset({"add", "update", "delete", "delete_all", "resolve", "purge_expired", "forget"})
# Reads files on the server's machine (a scoped token uploads instead: ingest_upload).
SERVER_FILES = frozenset({"ingest"})
# After these the stored tokens may have changed (forget erases a scope's tokens with it).
TOKENS_CHANGE = frozenset({"create_token", "revoke_token", "forget", "reset", "scrub", "doctor"})


class Grant:
    """What one request may do: the admin (everything) or a named token's scope and rights."""

    __slots__ = ("name", "scope", "read_only", "admin", "actor")

    def __init__(self, name: str | None = None, scope: dict[str, str] | None = None, *, read_only: bool = False,
                 admin: bool = False) -> None:
        self.name, self.scope, self.read_only, self.admin = name, dict(scope or {}), read_only, admin
        self.actor = f"token:{name}" if name else None

    def __repr__(self) -> str:
        return "Grant(admin)" if self.admin else f"Grant({self.name!r}, {self.scope}, read_only={self.read_only})"


ADMIN = Grant(admin=True)


def other_scope(key: str, value: Any) -> NotFoundError:
    """The one answer for an identity outside the token's scope (its text depends on the value only)."""
    return NotFoundError(f"no memories of {key}={value!r}",
                         hint=f"this token sees one scope: leave {key} out and it is filled in")


def check_filter_scope(filters: Any, scope: dict[str, str]) -> None:
    """Refuse (NotFoundError) a filter tree that names any identity outside `scope` anywhere.

    >>> check_filter_scope({"OR": [{"topic": "food"}, {"user_id": "alice"}]}, {"user_id": "alice"})
    >>> check_filter_scope({"NOT": {"user_id": {"in": ["bob"]}}}, {"user_id": "alice"})
    Traceback (most recent call last):
    ...
    memstore.core.errors.NotFoundError: no memories of user_id={'in': ['bob']} — this token sees one scope: leave user_id out and it is filled in
    """
    filter_within(filters, canonical_scope(scope), other_scope)


def confine(kwargs: dict[str, Any], scope: dict[str, str]) -> dict[str, Any]:
    """`kwargs` with the scope filled in; an identity or filter naming another scope raises. Values
    are compared and passed on in their canonical form (core/scope_rule.py: " alice" is alice).

    >>> confine({"agent_id": "x", "top_k": 3}, {"user_id": "alice"})
    {'agent_id': 'x', 'top_k': 3, 'user_id': 'alice'}
    """
    out = dict(kwargs)
    out.update(confine_scope(out, scope, other_scope))
    if out.get("filters"):      # the library ANDs the identity arguments over the whole tree
        check_filter_scope(out["filters"], scope)
    return out


class GuardedMemory:
    """`inner` (a Memory, or the server's view of one that adds through the group committer) as
    the grant returned by `grant_of()` may use it; `grant_of` is read at each call (the server's
    current request). `on_tokens_changed()` runs after a call that may have changed the tokens.
    `door` names this way in for the audit of reads (the reads carry the token's name)."""

    def __init__(self, inner: Any, grant_of: Callable[[], Grant | None], *,
                 on_tokens_changed: Callable[[], None] | None = None,
                 before_list_tokens: Callable[[], None] | None = None, door: str = "server") -> None:
        self._inner = inner
        self._door = door
        self._grant_of = grant_of
        self._changed = on_tokens_changed
        self._before_list = before_list_tokens

    @property
    def path(self) -> str:
        return self._inner.path

    @property
    def grant(self) -> Grant:
        """The grant calls run under now (AuthError when the request carries no credentials)."""
        grant = self._grant_of()
        if grant is None:       # fail closed: a route that did not authenticate sees nothing
            raise AuthError("this request carries no credentials", hint="send `Authorization: Bearer <token>`")
        return grant

    def search_with_vector(self, vector: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        """`search` as this grant may call it, with the query's vector given (a front embedded it)."""
        grant = self.grant
        if not grant.admin:
            args, kwargs = self._within(grant, "search", args, kwargs)
        with reading(token=grant.name or "admin", door=self._door):
            return self._inner.search_with_vector(vector, query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name not in METHODS and name != "ingest_upload":
            return getattr(self._inner, name)       # the server's own plumbing (never a route)
        impl = self._inner.ingest if name == "ingest_upload" else getattr(self._inner, name)
        call = functools.partial(self._call, name, impl)
        functools.update_wrapper(call, getattr(type(getattr(self._inner, "_memory", self._inner)), name, None) or impl)
        object.__setattr__(self, name, call)        # resolved once per name
        return call

    def _call(self, name: str, impl: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        grant = self.grant
        if not grant.admin:
            args, kwargs = self._within(grant, name, args, kwargs)
        elif name == "list_tokens" and self._before_list is not None:
            self._before_list()
        try:
            with reading(token=grant.name or "admin", door=self._door):
                return impl(*args, **kwargs)
        finally:
            if name in TOKENS_CHANGE and self._changed is not None:
                self._changed()

    def admit(self, name: str, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        """The arguments `name(*args, **kwargs)` runs with under the current grant (scope filled in,
        actor_id set), or the error the call would raise: what a front process asks the owner
        before it prepares an add (memstore/server/fronts.py)."""
        grant = self.grant
        return (args, kwargs) if grant.admin else self._within(grant, name, args, kwargs)

    def _within(self, grant: Grant, name: str, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict]:
        spec = METHODS.get(name)
        if spec is None or spec.analyst or spec.admin or name in SERVER_FILES:
            if name != "ingest_upload":
                raise TokenRightsError(f"{name}() needs the server's admin token; token {grant.name!r} is scoped "
                                       f"to {_who(grant.scope)}",
                                       hint="call it with the admin token (<store>.server-token)" +
                                            ("; a scoped token sends files with ingest_upload" if name == "ingest"
                                             else ""))
        if name == "frame" and (args[0] if args else kwargs.get("name")) == "reads":
            raise TokenRightsError(f"the audit of reads needs the server's admin token; token {grant.name!r} is "
                                   f"scoped to {_who(grant.scope)}",
                                   hint="ask the operator: `memstore reads --user ...` with the admin token")
        writes = spec.writes if spec is not None else True
        if name == "purge_expired" and kwargs.get("dry_run"):
            writes = False
        if writes and grant.read_only:
            raise TokenRightsError(f"token {grant.name!r} is read-only: {name}() changes the store",
                                   hint="make a read-write token for writes (memstore token create without "
                                        "--read-only)")
        if name in ACTS:
            kwargs = {**kwargs, "actor_id": grant.actor}
        if name in SCOPED:
            kwargs = confine(kwargs, grant.scope)
        elif name == "resolve":
            ids = [args[0] if args else kwargs.get("keep")]
            for key, pos in (("supersede", 1), ("dismiss", None)):
                more = args[pos] if pos is not None and len(args) > pos else kwargs.get(key)
                ids += [more] if isinstance(more, str) else list(more or [])
            with quiet():       # a check of the write, not a read of the caller's
                for memory_id in ids:
                    self._inner.get(memory_id, **grant.scope)     # NotFoundError outside the scope
        return args, kwargs


def _who(scope: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in scope.items())
