"""Memory API: governance features (mixed into memstore.Memory): verifiable erasure with receipts,
retention, and the doctor.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "g.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> _ = m.add("My parrot is called Quetzalcoatlus", user_id="zoe", infer=False)
>>> r = m.forget(user_id="zoe")
>>> r["verified"], r["rows_removed"]["memories"], "zoe" in str(r)
(True, 1, False)
>>> len(m.erasure_receipts(user_id="zoe")), len(m.erasure_receipts(user_id="someone-else"))
(1, 0)
>>> m.doctor().height
0
>>> m.close()
"""
from __future__ import annotations

import json
from typing import Any

import polars as pl

from memstore.core.identity import Scope


class GovernanceAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def forget(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
               actor_id: str | None = None, scrub: bool = True) -> dict[str, Any]:
        """Erase a scope from every table, every registered Parquet export and the file's bytes;
        return the receipt (also stored, with the scope only as a keyed hash).

        Every row naming the scope goes: memories, postings, links, keyword postings, history (text
        included), messages, extraction runs, retention policies, and entities no other scope
        uses. Then the database file is rewritten so the deleted bytes are gone (DuckDB keeps them
        after DELETE and CHECKPOINT), and the files are scanned for the scope's id and distinctive
        strings. `receipt["verified"]` is True only when nothing was found. `scrub=False` skips the
        rewrite (faster, e.g. before a batch; then call `scrub()`), and the receipt will say so.
        The deletes and a journal entry commit together; a crash or a full disk after that leaves
        the erasure pending, and the next open of the store (or doctor(repair=True), scrub())
        finishes it before anything else runs. The rewrite reopens this Memory's connection
        (keeping the file locked): statements other threads run at that moment fail and should be
        retried; a second Memory on the same file in this process blocks the rewrite
        (ErasureIncompleteError; the erasure stays pending).
        """
        from memstore.governance.forget_scope import forget_scope

        scope = Scope.from_kwargs(user_id, agent_id, run_id).as_dict()
        reads = getattr(self, "read_log", None)
        if reads is not None:
            reads.flush()           # the scope's reads held in memory are erased with the rest
        if not self._rt.db.read_only:
            from memstore.audit.read_retention import erase_mentions

            erase_mentions(self._rt.db, scope)      # analyst queries that name the scope (its bytes: the rewrite)
        try:
            return forget_scope(self._rt, scope, actor_id=actor_id, scrub=scrub)
        finally:
            if reads is not None:
                reads.drop_scope(scope)     # and none made during the erasure is written after it

    def erasure_receipts(self, *, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None) -> list[dict[str, Any]]:
        """Stored erasure receipts, newest first; with a scope, only the receipts of exactly that
        scope (matched by recomputing its keyed hash: the scope itself is not stored)."""
        from memstore.governance.forget_scope import receipt_key
        from memstore.governance.receipt_key import scope_hash

        wanted = None
        if user_id is not None or agent_id is not None or run_id is not None:
            wanted = scope_hash(receipt_key(self._rt.db.path), Scope.from_kwargs(user_id, agent_id, run_id).as_dict())
        from memstore.governance.forget_scope import unfinished

        rows = self._rt.db.dicts("queries/list_receipts", {"scope_hash": wanted})
        for r in rows:
            for k in ("rows_removed", "files_rewritten", "verification", "timings_ms"):
                if isinstance(r[k], str):
                    r[k] = json.loads(r[k])
            r["pending"] = unfinished(r["verification"] or {}) if not r["verified"] else []
        return rows

    def scrub(self) -> dict[str, Any]:
        """Rewrite the database file so deleted rows leave no bytes behind (forget does this itself;
        use after delete/delete_all/apply_retention when their bytes must go too). A pending
        erasure (interrupted by a crash or a full disk) is finished first: its receipt is stored."""
        from memstore.governance.forget_scope import finish_pending
        from memstore.governance.rewrite_database import rewrite_database

        done = finish_pending(self._rt.db)
        if any(r["method"] == "rewrite" for r in done):      # that rewrite already scrubbed the file
            return {"method": "rewrite", "finished_erasures": [r["id"] for r in done]}
        return rewrite_database(self._rt.db)

    def set_retention(self, target: str, retain_days: int | None, *, user_id: str | None = None,
                      agent_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
        """Keep `target` ("messages", "history_text" or "reads": the audit of reads) for
        `retain_days` days, globally or for one scope (the most specific policy wins). `retain_days=None` keeps forever (a scope can opt out
        of a global policy). Applied by `apply_retention()`."""
        from memstore.governance.retention import set_policy

        return set_policy(self._rt.db, target, retain_days, user_id=user_id, agent_id=agent_id, run_id=run_id)

    def clear_retention(self, target: str, *, user_id: str | None = None, agent_id: str | None = None,
                        run_id: str | None = None) -> bool:
        """Remove one retention policy; True if there was one."""
        from memstore.governance.retention import clear_policy

        return clear_policy(self._rt.db, target, user_id=user_id, agent_id=agent_id, run_id=run_id)

    def retention_policies(self) -> pl.DataFrame:
        """Retention policies as a frame (target, user_id, agent_id, run_id, retain_days, updated_at)."""
        return self._rt.db.frame("queries/retention_policies")

    def apply_retention(self, *, now: Any = None, dry_run: bool = False) -> dict[str, int]:
        """Delete messages and blank history text older than their policy allows (one transaction),
        and delete reads older than theirs (else than config `audit.retain_days`).
        Returns counts: {"messages": n, "history_text": n, "reads": n}. `dry_run` counts without changing."""
        from memstore.audit.read_retention import expire_reads
        from memstore.core.timeutil import parse_time
        from memstore.governance.retention import apply_retention

        when = parse_time(now, "now") if now is not None else None
        out = apply_retention(self._rt.db, now=when, dry_run=dry_run)
        out["reads"] = expire_reads(self._rt.db, default_days=self._rt.config.audit.retain_days, now=when,
                                    dry_run=dry_run)
        return out

    def doctor(self, *, repair: bool = False) -> pl.DataFrame:
        """Check the store's invariants; one row per violation (check, severity, table, row_id,
        detail, repairable, repaired). Empty frame = healthy. `repair=True` fixes what is safe to
        fix (orphan rows, stale counts, bad embeddings re-embedded) and reports what it did."""
        from memstore.governance.doctor import run_doctor

        return run_doctor(self._rt, repair=repair)
