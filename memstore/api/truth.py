"""Memory API: truth over time (mixed into memstore.Memory).

Supersession happens on the write path (memstore/pipeline/supersede_by_slot.py and the LLM's
`supersedes`); reads show current facts unless asked (`include_superseded`, `as_of`, `show_expired`).
Here: the contradictions a person may resolve, the timeline of every fact, and expiry purging.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "t.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> _ = m.add("I live in Boston", user_id="alice", timestamp="2023-03-01")
>>> _ = m.add("I moved to Seattle", user_id="alice", timestamp="2023-05-01")
>>> [r["memory"] for r in m.get_all(user_id="alice")["results"]]
['Alice moved to Seattle']
>>> [r["memory"] for r in m.get_all(user_id="alice", as_of="2023-04-01")["results"]]
['Alice lives in Boston']
>>> m.timeline(user_id="alice").select("memory", "status").rows()
[('Alice lives in Boston', 'superseded'), ('Alice moved to Seattle', 'current')]
>>> m.close()
"""
from __future__ import annotations

from typing import Any

import polars as pl

from memstore.core.identity import Scope
from memstore.core.timeutil import parse_time
from memstore.retrieval.filters import compile_filters
from memstore.store.sqlfiles import load_sql


class TruthAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def contradictions(self, *, user_id: str | None = None, agent_id: str | None = None,
                       run_id: str | None = None) -> pl.DataFrame:
        """Candidate conflicts among the scope's current facts, one row per pair (older first):
        same subject + slot with different values, or similar embeddings with different text.
        Columns: kind, reason, subject, slot, similarity, older_id/_memory/_valid_from,
        newer_id/_memory/_valid_from, identity. Decide with `resolve(keep=..., supersede=[...])`."""
        return self._truth_frame("contradictions", user_id, agent_id, run_id)

    def timeline(self, *, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None) -> pl.DataFrame:
        """Every fact of the scope (current, superseded, expired) with its validity interval
        (valid_from, valid_to), status, slot and what superseded it; ordered by valid_from."""
        return self._truth_frame("timeline", user_id, agent_id, run_id)

    def resolve(self, keep: str, supersede: Any = None, *, dismiss: Any = None,
                actor_id: str | None = None) -> dict[str, Any]:
        """A person's decision on a contradiction, in one transaction: `keep` stays current, the
        memories in `supersede` are superseded by it, those in `dismiss` are marked compatible with
        it (both stay current, the pair leaves the contradictions view). History records a RESOLVE
        event with `actor_id` on every memory involved."""
        from memstore.governance.resolve import resolve_memories

        return resolve_memories(self._rt, keep, supersede, dismiss, actor_id)

    def purge_expired(self, *, user_id: str | None = None, agent_id: str | None = None,
                      run_id: str | None = None, now: Any = None, actor_id: str | None = None,
                      dry_run: bool = False) -> dict[str, Any]:
        """Physically delete memories whose expiration_date has passed (of the given scope, or of
        all scopes) with their postings and links, in one transaction; history keeps an EXPIRE
        event (without text under history="redacted"). `dry_run=True` only lists them."""
        from memstore.governance.expire import purge_expired

        given = (user_id, agent_id, run_id)
        scope = Scope.from_kwargs(*given) if any(v is not None for v in given) else None
        when = parse_time(now, "now") if now is not None else None
        purged = purge_expired(self._rt, scope=scope, now=when, actor_id=actor_id, dry_run=dry_run)
        verb = "would purge" if dry_run else "purged"
        return {"purged": 0 if dry_run else len(purged), "ids": [p["id"] for p in purged],
                "message": f"{verb} {len(purged)} expired memories"}

    # -- helpers ---------------------------------------------------------------------------------
    def _truth_frame(self, view: str, user_id: str | None, agent_id: str | None, run_id: str | None) -> pl.DataFrame:
        from memstore.store.views import ensure_views

        scope = Scope.from_kwargs(user_id, agent_id, run_id)
        where, params, _ = compile_filters(scope.as_dict(), alias="v")
        ensure_views(self._rt.db)
        sql = load_sql(f"queries/select_{view}").replace("/*WHERE*/", where)
        return self._rt.db.frame(f"select_{view}", params, sql=sql)
