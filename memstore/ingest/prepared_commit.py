"""The owner's half of an ingest prepared elsewhere (Ray workers, memstore/ray/): which messages a
scope already holds, and the commit of prepared conversations, checked against them again.

A conversation is committed whole in one write unit with its `ingest_log` rows (as the one-machine
runner does: memstore/ingest/runner.py), so a retried or repeated delivery (a worker's task run
twice, a driver started again) finds its messages in `ingest_log` and stores nothing twice: every
message of it known → `already_ingested`; some known (the conversation was planned before another
ingest stored part of it) → `failed`, to be planned again by the next run.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.identity import Scope
from memstore.core.ids import new_id
from memstore.ingest.plan import ConversationJob, log_rows
from memstore.pipeline.add import commit
from memstore.store.database import registered
from memstore.store.writer import BatchedWriter

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def known_messages(rt: Runtime, scope: Scope, fmt: str, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (conversation_id, message_key) pairs of `pairs` already in `ingest_log` for `scope` and
    source format `fmt`."""
    pairs = list(pairs)
    if not pairs:
        return set()
    table = pa.table({"conversation_id": [p[0] for p in pairs], "message_key": [p[1] for p in pairs]})
    with registered(rt.db, "candidates", table):
        return set(rt.db.rows("queries/ingest_known_messages", {"scope_key": scope.key, "source_format": fmt}))


def commit_conversations(rt: Runtime, scope: Scope, jobs: list[ConversationJob], *,
                         ingest_id: str | None = None) -> list[dict[str, Any]]:
    """Commit prepared conversations of `scope` in order, in one write unit (each conversation
    alone if the unit fails). Per conversation: {"conversation", "status": stored |
    already_ingested | failed, "messages", "error", "memories": {added, deduplicated, superseded},
    "extraction_runs": {status: n}}."""
    ingest_id = ingest_id or new_id()
    out: dict[int, dict[str, Any]] = {}
    ready: list[tuple[int, ConversationJob]] = []
    by_format: dict[str, list[tuple[str, str]]] = {}
    for job in jobs:
        by_format.setdefault(job.format, []).extend((job.id, k) for k in job.keys)
    known = {fmt: known_messages(rt, scope, fmt, pairs) for fmt, pairs in by_format.items()}
    for i, job in enumerate(jobs):
        n_known = sum((job.id, k) in known[job.format] for k in job.keys)
        base = {"conversation": job.id, "format": job.format, "messages": job.n_new, "error": None}
        if n_known == job.n_new:
            out[i] = {**base, "status": "already_ingested"}
        elif n_known:
            out[i] = {**base, "status": "failed",
                      "error": f"{n_known} of its {job.n_new} messages were stored meanwhile by another ingest; "
                               "run the ingest again to plan it anew"}
        else:
            ready.append((i, job))
    for _, job in ready:
        job.states[-1].extra_rows = {"ingest_log": log_rows(scope, job, ingest_id=ingest_id, now=job.states[0].now)}
    results = commit([job.states for _, job in ready], rt, BatchedWriter(rt.db), step="ingest") if ready else []
    for (i, job), res in zip(ready, results):
        base = {"conversation": job.id, "format": job.format, "messages": job.n_new}
        if isinstance(res, BaseException):
            out[i] = {**base, "status": "failed", "error": f"{type(res).__name__}: {res}"[:1000]}
            continue
        runs = Counter(st.extraction.status for st in job.states)
        out[i] = {**base, "status": "stored", "error": None, "extraction_runs": dict(runs), "memories": {
            "added": sum(f.outcome == "added" for st in job.states for f in st.facts),
            "deduplicated": sum(f.outcome.startswith("duplicate") for st in job.states for f in st.facts),
            "superseded": sum(r.get("event") == "SUPERSEDE" for st in job.states for r in st.results)}}
    return [out[i] for i in range(len(jobs))]
