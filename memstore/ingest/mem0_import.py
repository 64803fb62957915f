"""Import an existing mem0 OSS store: its Qdrant local-mode folder and its SQLite history.db.

mem0 keeps each memory as a Qdrant point (id = the memory id) whose payload holds `data` (the
text), `hash`, `user_id` / `agent_id` / `run_id`, `actor_id`, `role`, `created_at`, `updated_at`
and the caller's metadata as further top-level keys (or under `metadata`); history.db holds the
`history` table (memory_id, old_memory, new_memory, event, created_at, ...). The import writes
each memory with its id, text, identity, metadata and times, rebuilds entities, keyword postings
and fact slots with memstore's own analysis (no LLM), embeds the text with this store's embedder
(or keeps mem0's vectors with `keep_vectors=True` when their dimension matches) and copies the
history rows of the memories it imports. memstore's `hash` column is its own de-duplication key
(md5 of the normalised text); mem0's hash is kept as `metadata["mem0"]["hash"]`.

Idempotent: a memory whose id this store already knows (stored, or named by history because it
was deleted since) is skipped, so a re-run imports only what is new. Memories whose text repeats a
current memory of the same scope are skipped too (one memory per text and scope, as add() keeps).
"""
from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memstore.core.errors import (
    IdentityError,
    Mem0ImportError,
    )
from memstore.core.identity import RESERVED_METADATA_KEYS, Scope
from memstore.core.ids import content_hash
from memstore.core.model import AddOptions, AddState, Extraction, Fact, ImportedEvent, ImportedRecord
from memstore.core.rules.slots import detect_slot
from memstore.core.timeutil import TimeParseError, parse_time, utcnow
from memstore.pipeline.add import commit
from memstore.store.history import keeps_history
from memstore.store.recluster import sorted_import
from memstore.store.writer import BatchedWriter

if TYPE_CHECKING:
    from memstore.runtime import Runtime

# payload keys that are mem0's own fields, not the caller's metadata
_MEM0_FIELDS = frozenset({"data", "hash", "user_id", "agent_id", "run_id", "actor_id", "role", "created_at",
                          "updated_at", "text_lemmatized", "metadata", "id", "memory", "attributed_to"})
_EXAMPLES = 20


@dataclass
class _Planned:
    id: str
    text: str
    scope: Scope
    metadata: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    actor_id: str | None
    role: str | None
    vector: Any = None


@dataclass
class ImportReport:
    read: int = 0
    imported: int = 0
    skipped_by_reason: Counter = field(default_factory=Counter)
    skipped_examples: list[dict[str, str]] = field(default_factory=list)
    history_read: int = 0
    history_imported: int = 0
    history_skipped_by_reason: Counter = field(default_factory=Counter)
    vectors: str = "re-embedded"
    warnings: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def skip(self, memory_id: str, reason: str) -> None:
        self.skipped_by_reason[reason] += 1
        if len(self.skipped_examples) < _EXAMPLES:
            self.skipped_examples.append({"id": memory_id, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        skipped = sum(self.skipped_by_reason.values())
        return {"read": self.read, "imported": self.imported, "skipped": skipped,
                "skipped_by_reason": dict(self.skipped_by_reason), "skipped_examples": self.skipped_examples,
                "history_read": self.history_read, "history_imported": self.history_imported,
                "history_skipped_by_reason": dict(self.history_skipped_by_reason), "vectors": self.vectors,
                "warnings": dict(self.warnings), "seconds": round(self.seconds, 3),
                "memories_per_s": self.imported / self.seconds if self.seconds > 0 else 0.0}


# -- reading mem0 ---------------------------------------------------------------------------------
def read_points(qdrant_path: str | os.PathLike, collection: str, *, with_vectors: bool,
                page: int = 512) -> tuple[int | None, Iterator[tuple[str, dict[str, Any], Any]]]:
    """(vector dimension, iterator of (id, payload, vector)) of a Qdrant local-mode collection."""
    path = os.fspath(qdrant_path)
    if not os.path.isdir(path):
        raise Mem0ImportError(f"no Qdrant folder at {path}",
                              hint="pass mem0's vector_store.config.path (mem0's default is /tmp/qdrant)")
    try:
        from qdrant_client import QdrantClient
    except ImportError as exc:
        raise Mem0ImportError("reading a mem0 store needs qdrant-client", hint="pip install qdrant-client") from exc
    try:
        client = QdrantClient(path=path)
    except Exception as exc:   # portalocker: a running mem0 holds the folder
        raise Mem0ImportError(f"cannot open the Qdrant folder {path}: {exc}",
                              hint="stop the process using mem0 (Qdrant local mode allows one client) and retry") from exc
    names = [c.name for c in client.get_collections().collections]
    if collection not in names:
        client.close()
        raise Mem0ImportError(f"Qdrant folder {path} has no collection {collection!r}",
                              hint=f"collections there: {names or 'none'}; pass --collection NAME")
    params = client.get_collection(collection).config.params.vectors
    dim = getattr(params, "size", None)
    if dim is None and isinstance(params, dict) and params:
        dim = next(iter(params.values())).size

    def points() -> Iterator[tuple[str, dict[str, Any], Any]]:
        offset = None
        try:
            while True:
                batch, offset = client.scroll(collection, limit=page, offset=offset, with_payload=True,
                                              with_vectors=with_vectors)
                for p in batch:
                    vec = p.vector
                    if isinstance(vec, dict):
                        vec = next(iter(vec.values()), None)
                    yield str(p.id), dict(p.payload or {}), vec
                if offset is None:
                    return
        finally:
            client.close()

    return dim, points()


def read_history(path: str | os.PathLike | None) -> dict[str, list[dict[str, Any]]]:
    """mem0's history rows by memory id, oldest first (current schema, or the older
    prev_value/new_value/timestamp one)."""
    if path is None:
        return {}
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise Mem0ImportError(f"no history database at {path}", hint="pass mem0's history_db_path, or leave --history out")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = {r[1] for r in con.execute("PRAGMA table_info(history)")}
        if not cols:
            raise Mem0ImportError(f"{path} has no `history` table", hint="is this mem0's history.db?")
        pick = {"memory_id": "memory_id", "event": "event",
                "old_memory": "old_memory" if "old_memory" in cols else "prev_value",
                "new_memory": "new_memory" if "new_memory" in cols else "new_value",
                "created_at": "created_at" if "created_at" in cols else "timestamp",
                "actor_id": "actor_id", "role": "role"}
        select = ", ".join(f'"{src}"' if src in cols else "NULL" for src in pick.values())
        rows = con.execute(f"SELECT {select} FROM history").fetchall()  # column names from the fixed map above
    except sqlite3.DatabaseError as exc:
        raise Mem0ImportError(f"cannot read {path}: {exc}", hint="is this mem0's history.db (SQLite)?") from exc
    finally:
        con.close()
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        rec = dict(zip(pick, row))
        if rec["memory_id"]:
            out[str(rec["memory_id"])].append(rec)
    for recs in out.values():
        recs.sort(key=lambda r: str(r["created_at"] or ""))
    return out


def plan_point(pid: str, payload: dict[str, Any], vector: Any, report: ImportReport) -> _Planned | str:
    """A mem0 point as the memory to write, or the reason it cannot be imported."""
    text = payload.get("data", payload.get("memory"))
    if not isinstance(text, str) or not text.strip():
        return "no text (payload has no 'data' string)"
    try:
        scope = Scope.from_kwargs(*(payload.get(k) or None for k in ("user_id", "agent_id", "run_id")))
    except IdentityError as exc:
        return f"bad identity: {exc}"
    meta = {k: v for k, v in payload.items() if k not in _MEM0_FIELDS}
    if isinstance(payload.get("metadata"), dict):
        meta.update(payload["metadata"])
    for k in sorted(set(meta) & RESERVED_METADATA_KEYS):
        meta.pop(k)
        report.warnings[f"metadata key {k!r} dropped (memstore reserves it)"] += 1
    if payload.get("hash"):
        meta["mem0"] = {"hash": payload["hash"]}
    times = {}
    for key in ("created_at", "updated_at"):
        raw = payload.get(key)
        try:
            times[key] = parse_time(raw, key) if raw else None
        except TimeParseError:
            times[key] = None
            report.warnings[f"unreadable {key} (import time used)"] += 1
    created = times["created_at"] or times["updated_at"] or utcnow()
    actor = payload.get("actor_id") if isinstance(payload.get("actor_id"), str) else None
    role = payload.get("role") if isinstance(payload.get("role"), str) else None
    return _Planned(pid, text.strip(), scope, meta, created, times["updated_at"] or created, actor, role, vector)


# -- writing --------------------------------------------------------------------------------------
def import_mem0(rt: Runtime, qdrant_path: str | os.PathLike, *, collection: str = "mem0",
                history: str | os.PathLike | None = None, keep_vectors: bool = False,
                batch_size: int = 500) -> dict[str, Any]:
    """See `Memory.import_mem0`. Returns the report as a dict."""
    t0 = time.perf_counter()
    report = ImportReport()
    hist = read_history(history)
    report.history_read = sum(len(v) for v in hist.values())
    dim, points = read_points(qdrant_path, collection, with_vectors=keep_vectors)
    use_vectors = keep_vectors and dim == rt.db.dim
    if keep_vectors:
        report.vectors = "kept" if use_vectors else (f"re-embedded: mem0's vectors are {dim}-d, this store's "
                                                     f"embedder {rt.db.dim}-d")
    seen_ids: set[str] = set()
    planned_all: list[_Planned] = []
    for pid, payload, vec in points:
        report.read += 1
        if pid in seen_ids:
            report.skip(pid, "id repeated in the mem0 store")
            continue
        seen_ids.add(pid)
        planned = plan_point(pid, payload, vec if use_vectors else None, report)
        if isinstance(planned, str):
            report.skip(pid, planned)
            continue
        planned_all.append(planned)
    # written in scope order, as the re-cluster sorts (memstore/store/recluster.py): the rows form
    # one more sorted run, not a tail in append order that a full pass must rewrite
    planned_all.sort(key=lambda p: _scope_order(p.scope))
    with sorted_import(rt.db) as imp:
        before = report.imported
        for i in range(0, len(planned_all), batch_size):
            _write_chunk(rt, planned_all[i:i + batch_size], hist, report)
        imp.record(report.imported - before)
    orphans = sum(len(v) for k, v in hist.items() if k not in seen_ids)
    if orphans:
        report.history_skipped_by_reason["memory no longer in the mem0 store (its scope is unknown)"] += orphans
    report.seconds = time.perf_counter() - t0
    return report.to_dict()


def _scope_order(scope: Scope) -> tuple[Any, ...]:
    """The re-cluster's order (user_id, agent_id, run_id, NULLS LAST; strings by code point = DuckDB's
    byte order of UTF-8).

    >>> [(s.user_id, s.agent_id) for s in sorted([Scope("b"), Scope(None, "a"), Scope("a"), Scope("a", "x")],
    ...                                           key=_scope_order)]
    [('a', 'x'), ('a', None), ('b', None), (None, 'a')]
    """
    return tuple(x for v in (scope.user_id, scope.agent_id, scope.run_id) for x in (v is None, v or ""))


def _write_chunk(rt: Runtime, chunk: list[_Planned], hist: dict[str, list[dict[str, Any]]],
                 report: ImportReport) -> set[str]:
    """Analyse, embed and write one chunk in ONE transaction (a failure stores none of it, and the
    chunks before it stay: a re-run completes the rest); returns the ids written."""
    db = rt.db
    known = {r[0] for r in db.rows("queries/known_memory_ids", {"ids": [p.id for p in chunk]})}
    todo = []
    for p in chunk:
        if p.id in known:
            report.skip(p.id, "already in this store (imported before)")
            for _ in hist.get(p.id, ()):
                report.history_skipped_by_reason["memory already imported"] += 1
        else:
            todo.append(p)
    if not todo:
        return set()
    analyses = rt.nlp.analyze([p.text for p in todo])
    vecs: list[Any] = [np.asarray(p.vector, dtype=np.float32) if _usable(p.vector, db.dim) else None for p in todo]
    need = [i for i, v in enumerate(vecs) if v is None]
    if need:
        for i, v in zip(need, rt.embedder.embed([todo[i].text for i in need])):
            vecs[i] = v
        if report.vectors == "kept":
            report.warnings["unusable mem0 vector (re-embedded)"] += len(need)
    by_scope: dict[Scope, list[int]] = defaultdict(list)
    for i, p in enumerate(todo):
        by_scope[p.scope].append(i)
    now = utcnow()
    written: set[str] = set()
    states: list[AddState] = []
    with db.write_lock:         # the twins read here stay true until the unit commits
        for scope, idx in by_scope.items():
            facts = []
            hashes = {i: content_hash(todo[i].text) for i in idx}
            stored = dict(db.rows("queries/dedupe_hash", {"scope_key": scope.key, "now": now,
                                                           "hashes": sorted(set(hashes.values()))}))
            taken: dict[str, str] = {}
            for i in sorted(idx, key=lambda j: (todo[j].created_at, todo[j].id)):   # the oldest of twins wins
                p, h = todo[i], hashes[i]
                twin = stored.get(h) or taken.get(h)
                if twin:
                    report.skip(p.id, "same text as another current memory of the scope")
                    continue
                taken[h] = p.id
                slot = _slot_of(p, scope)
                facts.append(Fact(text=p.text, id=p.id, hash=h, embedding=vecs[i], outcome="added", role=p.role,
                                  valid_from=p.created_at, entities=analyses[i].entities,
                                  terms=dict(analyses[i].terms), subject=slot and slot.subject,
                                  slot=slot and slot.slot, slot_value=slot and slot.value, slot_checked=True,
                                  imported=_record(p, hist.get(p.id, []), rt, report)))
            if facts:
                states.append(_state(scope, facts, now))
        if not states:
            return written
        # the same write steps as every add, in ONE unit: the chunk commits whole or not at all
        out = commit([states], rt, BatchedWriter(db), step="import_mem0")[0]
        if isinstance(out, BaseException):
            raise out
        written = {f.id for st in states for f in st.facts if f.outcome == "added"}
    report.imported += len(written)
    return written


def _slot_of(p: _Planned, scope: Scope) -> Any:
    """The fact's subject + slot. mem0 writes facts without their subject ("Works at Acme"), so a
    sentence that names none is read as said of the user ("Carol works at Acme")."""
    found = detect_slot(p.text)
    who = p.actor_id or scope.user_id
    if found is None and who and p.text[:1].isupper() and p.text.split()[0].lower().endswith("s"):
        found = detect_slot(f"{who[:1].upper()}{who[1:]} {p.text[:1].lower()}{p.text[1:]}")
    return found


def _usable(vec: Any, dim: int) -> bool:
    if vec is None:
        return False
    try:
        arr = np.asarray(vec, dtype=np.float32)
    except (TypeError, ValueError):
        return False
    return arr.shape == (dim,) and bool(np.isfinite(arr).all()) and float(np.abs(arr).sum()) > 0


def _state(scope: Scope, facts: list[Fact], now: dt.datetime) -> AddState:
    # facts decided here (twins, slots): no slot supersession among imported memories
    state = AddState(scope=scope, messages=[], metadata={}, infer=False, now=now,
                     options=AddOptions(slot_supersession="off", request_limits=False))
    state.facts = facts
    state.extraction = Extraction(status="ok", facts=facts, extractor="none", model="mem0-import")
    return state


def _record(p: _Planned, given: list[dict[str, Any]], rt: Runtime, report: ImportReport) -> ImportedRecord:
    """What an imported memory keeps of its mem0 record: metadata, times, actor and its history
    (instead of one ADD event at import time)."""
    events = []
    for e in given:
        try:
            when = parse_time(e["created_at"], "history created_at") if e.get("created_at") else p.created_at
        except TimeParseError:
            when = p.created_at
            report.warnings["unreadable history created_at (memory's created_at used)"] += 1
        events.append(ImportedEvent(str(e.get("event") or "UPDATE").upper(), e.get("old_memory"), e.get("new_memory"),
                                    when, e.get("actor_id"), e.get("role") or "user"))
    if keeps_history(rt.config.history):
        report.history_imported += len(given)
    return ImportedRecord(p.metadata, p.created_at, p.updated_at, p.actor_id, events)



