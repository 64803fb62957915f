"""Every row type memstore writes, built in one place (pure: nothing is written here).

add(), ingest, group commit, update, resolve and the mem0 import all take their rows from these
builders, so a column means the same thing whichever path wrote it. History rows come from
`memstore.store.history` (the one history policy). Builders return `Rows` (Python columns typed
by an Arrow schema): a single add hands them to a parameterised INSERT, a write unit joins many
adds' rows and converts each table to Arrow once.

>>> import datetime as dt
>>> from memstore.core.identity import Scope
>>> sc = Scope(user_id="ann")
>>> ents, eposts, kposts = posting_rows(sc, ["m1"], [[]], [{"tea": 2}], now=dt.datetime(2024, 1, 1))
>>> kposts.arrow().select(["memory_id", "term", "tf", "user_id"]).to_pylist()
[{'memory_id': 'm1', 'term': 'tea', 'tf': 2, 'user_id': 'ann'}]
>>> ents.num_rows, eposts.num_rows
(0, 0)
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.identity import Scope
from memstore.core.ids import entity_id, new_id
from memstore.core.model import ImportedEvent
from memstore.core.rules.validity import fact_expires_at, fact_valid_from
from memstore.store.history import HISTORY_SCHEMA, HistoryEvent, conversation_time, history_rows, state_event
from memstore.store.table_rows import Rows

if TYPE_CHECKING:
    from memstore.core.model import AddState, Fact

TS = pa.timestamp("us")
S = pa.string()
IDENT = [("scope_key", S), ("user_id", S), ("agent_id", S), ("run_id", S)]

# The tables one add writes, in the order they are written (all in one transaction).
ADD_TABLES = ("entities", "memories", "entity_postings", "keyword_postings", "memory_links", "history",
              "messages", "extraction_runs", "memory_sources")

ENTITIES = pa.schema([("id", S), ("name", S), ("norm", S), ("label", S), ("created_at", TS)])
ENTITY_POSTINGS = pa.schema([("entity_id", S), ("memory_id", S), *IDENT])
KEYWORD_POSTINGS = pa.schema([("memory_id", S), ("term", S), ("tf", pa.int32()), *IDENT])
MEMORY_LINKS = pa.schema([("src_id", S), ("dst_id", S), ("kind", S), ("created_at", TS), *IDENT])
MESSAGES = pa.schema([("id", S), ("role", S), ("name", S), ("content", S), ("created_at", TS), ("source_file", S),
                      ("source_conversation", S), ("source_message_id", S), *IDENT])
EXTRACTION_RUNS = pa.schema([("id", S), *IDENT, ("extractor", S), ("model", S), ("prompt_version", S),
                             ("input_message_ids", pa.list_(S)), ("status", S), ("n_facts", pa.int32()),
                             ("n_added", pa.int32()), ("n_deduplicated", pa.int32()), ("n_linked", pa.int32()),
                             ("facts", S), ("error", S), ("latency_ms", pa.float64()), ("raw_answer", S),
                             ("created_at", TS), ("said_at", TS)])
MEMORY_SOURCES = pa.schema([("memory_id", S), *IDENT, ("message_ids", pa.list_(S)), ("metadata", S),
                            ("extraction_run_id", S), ("created_at", TS)])
INGEST_LOG = pa.schema([*IDENT, ("source_format", S), ("conversation_id", S), ("message_key", S), ("message_id", S),
                        ("extraction_run_id", S), ("source_file", S), ("ingest_id", S), ("ingested_at", TS)])


@lru_cache(maxsize=8)
def memories_schema(dim: int) -> pa.Schema:
    """The `memories` columns an add writes (embedding: FLOAT[dim])."""
    return pa.schema([("id", S), ("memory", S), ("hash", S), ("user_id", S), ("agent_id", S), ("run_id", S),
                      ("actor_id", S), ("scope_key", S), ("role", S), ("attributed_to", S), ("metadata", S),
                      ("doc_len", pa.int32()), ("created_at", TS), ("updated_at", TS), ("expiration_date", TS),
                      ("valid_from", TS), ("source_message_ids", pa.list_(S)), ("extraction_run_id", S),
                      ("subject", S), ("slot", S), ("slot_value", S), ("superseded_by", S), ("invalidated_at", TS),
                      ("embedding", pa.list_(pa.float32(), dim))])


def _ident(scope: Scope, n: int) -> dict[str, list[Any]]:
    """The scope's identity columns repeated n times."""
    return {"scope_key": [scope.key] * n, "user_id": [scope.user_id] * n, "agent_id": [scope.agent_id] * n,
            "run_id": [scope.run_id] * n}


def entity_rows(entities: Iterable[Any], now: dt.datetime) -> Rows:
    """`entities` rows (shared by all scopes), one per distinct normalised name."""
    ents: dict[str, tuple[Any, ...]] = {}
    for e in entities:
        ents.setdefault(entity_id(e.norm), (e.name, e.norm, e.label))
    return Rows(ENTITIES, {"id": list(ents), "name": [v[0] for v in ents.values()],
                           "norm": [v[1] for v in ents.values()], "label": [v[2] for v in ents.values()],
                           "created_at": [now] * len(ents)})


def posting_rows(scope: Scope, memory_ids: Sequence[str], entities: Sequence[Sequence[Any]],
                 terms: Sequence[dict[str, int]], *, now: dt.datetime) -> tuple[Rows, Rows, Rows]:
    """(entities, entity_postings, keyword_postings) rows of memories: `entities[i]` and `terms[i]`
    are memory_ids[i]'s analysis (add, ingest, update)."""
    post: list[tuple[str, str]] = []
    term_rows: list[tuple[str, str, int]] = []
    for mid, ents, tf in zip(memory_ids, entities, terms):
        post.extend((entity_id(e.norm), mid) for e in ents)
        term_rows.extend((mid, t, c) for t, c in tf.items())
    eposts = Rows(ENTITY_POSTINGS, {"entity_id": [p[0] for p in post], "memory_id": [p[1] for p in post],
                                    **_ident(scope, len(post))})
    kposts = Rows(KEYWORD_POSTINGS, {"memory_id": [t[0] for t in term_rows], "term": [t[1] for t in term_rows],
                                     "tf": [t[2] for t in term_rows], **_ident(scope, len(term_rows))})
    return entity_rows((e for ents in entities for e in ents), now), eposts, kposts


def link_rows(scope: Scope, links: Sequence[tuple[str, str, str]], now: dt.datetime) -> Rows:
    """`memory_links` rows from (src_id, dst_id, kind)."""
    return Rows(MEMORY_LINKS, {"src_id": [ln[0] for ln in links], "dst_id": [ln[1] for ln in links],
                               "kind": [ln[2] for ln in links], "created_at": [now] * len(links),
                               **_ident(scope, len(links))})


def message_times(msgs: Sequence[Any], now: dt.datetime) -> list[dt.datetime]:
    """Each message's time; messages of one add that share a time are spaced 1 µs apart in the
    given order, so "newest N" (pruning, extractor context) keeps the conversation's order
    instead of falling back to random ids."""
    out: list[dt.datetime] = []
    prev_given = prev = None
    for m in msgs:
        given = m.created_at or now
        t = prev + dt.timedelta(microseconds=1) if prev is not None and given == prev_given else given
        out.append(t)
        prev_given, prev = given, t
    return out


def message_rows(scope: Scope, msgs: Sequence[Any], now: dt.datetime) -> Rows:
    """`messages` rows of one add (or one ingest batch)."""
    return Rows(MESSAGES, {"id": [m.id for m in msgs], "role": [m.role for m in msgs], "name": [m.name for m in msgs],
                           "content": [m.content for m in msgs], "created_at": message_times(msgs, now),
                           "source_file": [m.source_file for m in msgs],
                           "source_conversation": [m.source_conversation for m in msgs],
                           "source_message_id": [m.source_message_id for m in msgs], **_ident(scope, len(msgs))})


def _links_of(added: Sequence[Any]) -> list[tuple[str, str, str]]:
    links = [(f.id, dst, "related") for f in added for dst in dict.fromkeys(f.linked_ids) if dst not in f.supersedes]
    links += [(f.id, dst, "supersedes") for f in added for dst in dict.fromkeys(f.supersedes + f.narrows)]
    return links


def extraction_run_row(state: AddState, extraction_run_id: str) -> Rows:
    """The one `extraction_runs` row of an add (or an ingest batch). No memory ids: a deleted
    memory must leave no row naming it outside history; an added fact is found again through
    memories.extraction_run_id + hash."""
    ex, msgs = state.extraction, state.messages
    if ex is None:
        raise ValueError("an add reached the store without an extraction (the pipeline records one)")
    added = [f for f in state.facts if f.outcome == "added"]
    facts_json = json.dumps([{"text": f.text, "hash": f.hash, "outcome": f.outcome, "n_linked": len(f.linked_ids),
                              "n_supersedes": len(f.supersedes), "attributed_to": f.attributed_to}
                             for f in state.facts], ensure_ascii=False)
    return Rows(EXTRACTION_RUNS, {
        "id": [extraction_run_id], **_ident(state.scope, 1), "extractor": [ex.extractor], "model": [ex.model],
        "prompt_version": [ex.prompt_version], "input_message_ids": [[m.id for m in msgs]], "status": [ex.status],
        "n_facts": [len(state.facts)], "n_added": [len(added)],
        "n_deduplicated": [sum(f.outcome.startswith("duplicate") for f in state.facts)],
        "n_linked": [len(_links_of(added))], "facts": [facts_json], "error": [ex.error],
        "latency_ms": [float(ex.latency_ms)], "raw_answer": [ex.raw if ex.status == "malformed" else None],
        "created_at": [state.now], "said_at": [conversation_time(state)]})


def failed_run_params(scope: Scope, *, model: str | None, prompt_version: str | None, message_ids: list[str],
                      error: BaseException, now: dt.datetime) -> dict[str, Any]:
    """Parameters of `queries/insert_failed_run`: the trace of an LLM call that failed (status
    llm_error; its messages are not stored, so a retry does not duplicate them)."""
    return {"id": new_id(), "scope_key": scope.key, "user_id": scope.user_id, "agent_id": scope.agent_id,
            "run_id": scope.run_id, "extractor": "llm", "model": model, "prompt_version": prompt_version,
            "input_message_ids": message_ids, "error": str(error)[:2000], "latency_ms": None, "created_at": now}


def memory_rows(state: AddState, added: Sequence[Fact], extraction_run_id: str, dim: int) -> Rows:
    """`memories` rows of an add's new facts, with their truth columns (slot, late supersession)."""
    sc, now, n = state.scope, state.now, len(added)
    meta_json = json.dumps(state.metadata, ensure_ascii=False, default=str) if state.metadata else None
    own = [f.imported for f in added]         # an imported memory keeps its own record

    def meta_of(rec: Any) -> str | None:
        if rec is None:
            return meta_json
        return json.dumps(rec.metadata, ensure_ascii=False, default=str) if rec.metadata else None
    return Rows(memories_schema(dim), {
        "id": [f.id for f in added], "memory": [f.text for f in added], "hash": [f.hash for f in added],
        "user_id": [sc.user_id] * n, "agent_id": [sc.agent_id] * n, "run_id": [sc.run_id] * n,
        "actor_id": [rec.actor_id if rec else state.actor_id for rec in own], "scope_key": [sc.key] * n, "role": [f.role for f in added],
        "attributed_to": [f.attributed_to for f in added], "metadata": [meta_of(rec) for rec in own],
        "doc_len": [sum(f.terms.values()) for f in added], "created_at": [rec.created_at if rec else now for rec in own],
        "updated_at": [rec.updated_at if rec else now for rec in own],
        "expiration_date": [fact_expires_at(f, state) for f in added],
        "valid_from": [fact_valid_from(f, state) for f in added],
        "source_message_ids": [list(f.source_message_ids) for f in added], "extraction_run_id": [extraction_run_id] * n,
        "subject": [f.subject for f in added], "slot": [f.slot for f in added],
        "slot_value": [f.slot_value for f in added],
        "superseded_by": [f.superseded_by[0] if f.superseded_by else None for f in added],
        "invalidated_at": [f.superseded_by[1] if f.superseded_by else None for f in added],
        "embedding": [f.embedding for f in added]})


def imported_events(state: AddState, f: Fact) -> list[HistoryEvent]:
    """An imported memory's own history (with an ADD first when its source kept none)."""
    sc, rec = state.scope, f.imported
    if rec is None:
        raise ValueError("imported_events of a fact that was not imported")
    given = list(rec.history)
    if not any(e.event == "ADD" for e in given):
        given.insert(0, ImportedEvent("ADD", None, f.text, rec.created_at, rec.actor_id, f.role or "user"))
    return [HistoryEvent(f.stored_id, e.event, e.old_memory, e.new_memory, scope_key=sc.key, user_id=sc.user_id,
                         agent_id=sc.agent_id, run_id=sc.run_id, actor_id=e.actor_id, created_at=e.created_at,
                         role=e.role) for e in given]


def add_tables(state: AddState, history_policy: str, dim: int) -> dict[str, Rows]:
    """Every row one add writes, per table (ADD_TABLES). A late fact (stored already superseded by
    a newer stored fact) gets its `supersedes` link and SUPERSEDE event here."""
    sc, now = state.scope, state.now
    added = [f for f in state.facts if f.outcome == "added"]
    ex_id = state.extraction_run_id = state.extraction_run_id or new_id()
    ents, eposts, kposts = posting_rows(sc, [f.stored_id for f in added], [f.entities for f in added],
                                        [f.terms for f in added], now=now)
    late = [f for f in added if f.superseded_by is not None]
    links = _links_of(added) + [(f.superseded_by[0], f.stored_id, "supersedes") for f in late if f.superseded_by]
    events = [e for f in added for e in (imported_events(state, f) if f.imported else
                                         [state_event(state, f.stored_id, "ADD", None, f.text, f.source_message_ids)])]
    events += [state_event(state, f.stored_id, "SUPERSEDE", f.text, None, f.source_message_ids) for f in late]
    return {"entities": ents, "memories": memory_rows(state, added, ex_id, dim),
            "entity_postings": eposts, "keyword_postings": kposts, "memory_links": link_rows(sc, links, now),
            "history": history_rows(history_policy, events) or Rows(HISTORY_SCHEMA),
            "messages": message_rows(sc, state.messages, now), "extraction_runs": extraction_run_row(state, ex_id),
            "memory_sources": source_rows(state, ex_id)}


def source_rows(state: AddState, extraction_run_id: str) -> Rows:
    """`memory_sources` rows: each fact of this add found to be a memory already stored (or
    stored by this same add), with the message(s) and metadata it came with."""
    dups = [f for f in state.facts if f.outcome in ("duplicate", "duplicate_in_batch") and f.duplicate_of]
    n = len(dups)
    meta = json.dumps(state.metadata, ensure_ascii=False, default=str) if state.metadata else None
    return Rows(MEMORY_SOURCES, {"memory_id": [f.duplicate_of for f in dups], **_ident(state.scope, n),
                                 "message_ids": [list(f.source_message_ids) for f in dups], "metadata": [meta] * n,
                                 "extraction_run_id": [extraction_run_id] * n, "created_at": [state.now] * n})


def ingest_log_rows(scope: Scope, entries: Sequence[tuple[str, str, str, str, str | None, str | None]],
                    *, ingest_id: str, now: dt.datetime) -> Rows:
    """`ingest_log` rows from (source_format, conversation_id, message_key, message_id,
    extraction_run_id, source_file): which source message became which stored message."""
    cols = ("source_format", "conversation_id", "message_key", "message_id", "extraction_run_id", "source_file")
    n = len(entries)
    return Rows(INGEST_LOG, {**_ident(scope, n), **{c: [e[i] for e in entries] for i, c in enumerate(cols)},
                             "ingest_id": [ingest_id] * n, "ingested_at": [now] * n})
