"""Memory API: bearer tokens that carry a scope (mixed into memstore.Memory). The work lives in
memstore/governance/api_tokens.py; the server enforces them (memstore/server/auth.py). Through a
server these methods need its admin token.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "k.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> tok = m.create_token("support-ro", agent_id="support-bot", read_only=True)["token"]
>>> [(t["name"], t["scope"], t["rights"]) for t in m.list_tokens()]
[('support-ro', 'agent_id=support-bot', 'read-only')]
>>> m.revoke_token("support-ro")
{'revoked': 'support-ro'}
>>> m.close()
"""
from __future__ import annotations

from typing import Any


class TokenAPI:
    """Methods here use self._rt (Runtime: config, db, ...)."""

    def create_token(self, name: str, *, user_id: str | None = None, agent_id: str | None = None,
                     run_id: str | None = None, read_only: bool = False, expires: Any = None) -> dict[str, Any]:
        """Make a bearer token for one scope (user / agent / run) and return it ONCE in `["token"]`
        (only its sha256 is stored). `expires`: a duration ("30d", "12h") or a date; `read_only=True`
        refuses writes. A server applies the scope to every call made with it and records writes as
        actor `token:<name>`."""
        from memstore.governance.api_tokens import create_token

        db = self._rt.db  # type: ignore[attr-defined]
        return create_token(db, name, user_id=user_id, agent_id=agent_id, run_id=run_id, read_only=read_only,
                            expires=expires)

    def list_tokens(self) -> list[dict[str, Any]]:
        """Every token: name, scope, rights, created_at, last_used_at, expires_at, status (never the
        token itself)."""
        from memstore.governance.api_tokens import list_tokens

        return list_tokens(self._rt.db)  # type: ignore[attr-defined]

    def revoke_token(self, name: str) -> dict[str, Any]:
        """Delete the token `name`; a server refuses it from the next request on."""
        from memstore.governance.api_tokens import revoke_token

        return revoke_token(self._rt.db, name)  # type: ignore[attr-defined]
