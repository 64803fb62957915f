"""Every row type memstore writes, built in one place (pure: nothing is written here).

add(), ingest, group commit, update, the mem0 import and the erasure paths all take their rows
from these builders, so a column means the same thing whichever path wrote it. History rows come
from `memstore.write.history` (the one history policy).

>>> import datetime as dt
>>> from memstore.identity import Scope
>>> sc = Scope(user_id="ann")
>>> ents, eposts, kposts = posting_rows(sc, ["m1"], [[]], [{"tea": 2}], now=dt.datetime(2024, 1, 1))
>>> kposts.select(["memory_id", "term", "tf", "user_id"]).to_pylist()
[{'memory_id': 'm1', 'term': 'tea', 'tf': 2, 'user_id': 'ann'}]
>>> ents.num_rows, eposts.num_rows
(0, 0)
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Iterable, Sequence

import pyarrow as pa

from memstore.identity import Scope
from memstore.ids import entity_id, new_id
from memstore.write.history import HISTORY_SCHEMA, history_table, state_event

TS = pa.timestamp("us")

# The tables one add writes, in the order they are written (all in one transaction).
ADD_TABLES = ("entities", "memories", "entity_postings", "keyword_postings", "memory_links", "history",
              "messages", "extraction_runs")


def _ident(scope: Scope, n: int) -> dict[str, pa.Array]:
    """The scope's identity columns repeated n times (NULLs stay typed)."""
    return {"scope_key": pa.array([scope.key] * n, pa.string()),
            "user_id": pa.array([scope.user_id] * n, pa.string()),
            "agent_id": pa.array([scope.agent_id] * n, pa.string()),
            "run_id": pa.array([scope.run_id] * n, pa.string())}


def entity_rows(entities: Iterable[Any], now: dt.datetime) -> pa.Table:
    """`entities` rows (shared by all scopes), one per distinct normalised name."""
    ents: dict[str, tuple] = {}
    for e in entities:
        ents.setdefault(entity_id(e.norm), (e.name, e.norm, e.label))
    return pa.table({"id": pa.array(list(ents), pa.string()),
                     "name": pa.array([v[0] for v in ents.values()], pa.string()),
                     "norm": pa.array([v[1] for v in ents.values()], pa.string()),
                     "label": pa.array([v[2] for v in ents.values()], pa.string()),
                     "created_at": pa.array([now] * len(ents), TS)})


def posting_rows(scope: Scope, memory_ids: Sequence[str], entities: Sequence[Sequence[Any]],
                 terms: Sequence[dict[str, int]], *, now: dt.datetime) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(entities, entity_postings, keyword_postings) rows of memories: `entities[i]` and `terms[i]`
    are memory_ids[i]'s analysis (add, ingest, update)."""
    post: list[tuple[str, str]] = []
    term_rows: list[tuple[str, str, int]] = []
    for mid, ents, tf in zip(memory_ids, entities, terms):
        post.extend((entity_id(e.norm), mid) for e in ents)
        term_rows.extend((mid, t, c) for t, c in tf.items())
    eposts = pa.table({"entity_id": pa.array([p[0] for p in post], pa.string()),
                       "memory_id": pa.array([p[1] for p in post], pa.string()), **_ident(scope, len(post))})
    kposts = pa.table({"memory_id": pa.array([t[0] for t in term_rows], pa.string()),
                       "term": pa.array([t[1] for t in term_rows], pa.string()),
                       "tf": pa.array([t[2] for t in term_rows], pa.int32()), **_ident(scope, len(term_rows))})
    return entity_rows((e for ents in entities for e in ents), now), eposts, kposts


def link_rows(scope: Scope, links: Sequence[tuple[str, str, str]], now: dt.datetime) -> pa.Table:
    """`memory_links` rows from (src_id, dst_id, kind)."""
    return pa.table({"src_id": pa.array([l[0] for l in links], pa.string()),
                     "dst_id": pa.array([l[1] for l in links], pa.string()),
                     "kind": pa.array([l[2] for l in links], pa.string()),
                     "created_at": pa.array([now] * len(links), TS), **_ident(scope, len(links))})


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


def message_rows(scope: Scope, msgs: Sequence[Any], now: dt.datetime) -> pa.Table:
    """`messages` rows of one add (or one ingest batch)."""
    return pa.table({"id": pa.array([m.id for m in msgs], pa.string()),
                     "role": pa.array([m.role for m in msgs], pa.string()),
                     "name": pa.array([m.name for m in msgs], pa.string()),
                     "content": pa.array([m.content for m in msgs], pa.string()),
                     "created_at": pa.array(message_times(msgs, now), TS),
                     "source_file": pa.array([m.source_file for m in msgs], pa.string()),
                     "source_conversation": pa.array([m.source_conversation for m in msgs], pa.string()),
                     "source_message_id": pa.array([m.source_message_id for m in msgs], pa.string()),
                     **_ident(scope, len(msgs))})


def _links_of(added: Sequence[Any]) -> list[tuple[str, str, str]]:
    links = [(f.id, dst, "related") for f in added for dst in dict.fromkeys(f.linked_ids) if dst not in f.supersedes]
    links += [(f.id, dst, "supersedes") for f in added for dst in dict.fromkeys(f.supersedes + f.narrows)]
    return links


def extraction_run_row(state: Any, extraction_run_id: str) -> pa.Table:
    """The one `extraction_runs` row of an add (or an ingest batch). No memory ids: a deleted
    memory must leave no row naming it outside history; an added fact is found again through
    memories.extraction_run_id + hash."""
    ex, msgs = state.extraction, state.messages
    added = [f for f in state.facts if f.outcome == "added"]
    facts_json = json.dumps([{"text": f.text, "hash": f.hash, "outcome": f.outcome, "n_linked": len(f.linked_ids),
                              "n_supersedes": len(f.supersedes), "attributed_to": f.attributed_to}
                             for f in state.facts], ensure_ascii=False)
    return pa.table({
        "id": pa.array([extraction_run_id], pa.string()), **_ident(state.scope, 1),
        "extractor": pa.array([ex.extractor], pa.string()), "model": pa.array([ex.model], pa.string()),
        "prompt_version": pa.array([ex.prompt_version], pa.string()),
        "input_message_ids": pa.array([[m.id for m in msgs]], pa.list_(pa.string())),
        "status": pa.array([ex.status], pa.string()), "n_facts": pa.array([len(state.facts)], pa.int32()),
        "n_added": pa.array([len(added)], pa.int32()),
        "n_deduplicated": pa.array([sum(f.outcome.startswith("duplicate") for f in state.facts)], pa.int32()),
        "n_linked": pa.array([len(_links_of(added))], pa.int32()), "facts": pa.array([facts_json], pa.string()),
        "error": pa.array([ex.error], pa.string()), "latency_ms": pa.array([float(ex.latency_ms)], pa.float64()),
        "raw_answer": pa.array([ex.raw if ex.status == "malformed" else None], pa.string()),
        "created_at": pa.array([state.now], TS)})


def failed_run_params(scope: Scope, *, model: str | None, prompt_version: str | None, message_ids: list[str],
                      error: BaseException, now: dt.datetime) -> dict[str, Any]:
    """Parameters of `queries/insert_failed_run`: the trace of an LLM call that failed (status
    llm_error; its messages are not stored, so a retry does not duplicate them)."""
    return {"id": new_id(), "scope_key": scope.key, "user_id": scope.user_id, "agent_id": scope.agent_id,
            "run_id": scope.run_id, "extractor": "llm", "model": model, "prompt_version": prompt_version,
            "input_message_ids": message_ids, "error": str(error)[:2000], "latency_ms": None, "created_at": now}


def memory_rows(state: Any, added: Sequence[Any], extraction_run_id: str, dim: int) -> pa.Table:
    """`memories` rows of an add's new facts, with their truth columns (slot, late supersession)."""
    from memstore.store.database import vectors_table

    sc, now, n = state.scope, state.now, len(added)
    meta_json = json.dumps(state.metadata, ensure_ascii=False, default=str) if state.metadata else None
    ident = _ident(sc, n)
    return vectors_table(
        [f.embedding for f in added], dim,
        id=pa.array([f.id for f in added], pa.string()), memory=pa.array([f.text for f in added], pa.string()),
        hash=pa.array([f.hash for f in added], pa.string()),
        user_id=ident["user_id"], agent_id=ident["agent_id"], run_id=ident["run_id"],
        actor_id=pa.array([state.actor_id] * n, pa.string()), scope_key=ident["scope_key"],
        role=pa.array([f.role for f in added], pa.string()),
        attributed_to=pa.array([f.attributed_to for f in added], pa.string()),
        metadata=pa.array([meta_json] * n, pa.string()),
        doc_len=pa.array([sum(f.terms.values()) for f in added], pa.int32()),
        created_at=pa.array([now] * n, TS), updated_at=pa.array([now] * n, TS),
        expiration_date=pa.array([f.expires_at or state.expiration_date for f in added], TS),
        valid_from=pa.array([f.valid_from or state.timestamp or now for f in added], TS),
        source_message_ids=pa.array([f.source_message_ids for f in added], pa.list_(pa.string())),
        extraction_run_id=pa.array([extraction_run_id] * n, pa.string()),
        subject=pa.array([f.subject for f in added], pa.string()), slot=pa.array([f.slot for f in added], pa.string()),
        slot_value=pa.array([f.slot_value for f in added], pa.string()),
        superseded_by=pa.array([f.superseded_by[0] if f.superseded_by else None for f in added], pa.string()),
        invalidated_at=pa.array([f.superseded_by[1] if f.superseded_by else None for f in added], TS))


def add_tables(state: Any, history_policy: str, dim: int) -> dict[str, pa.Table]:
    """Every row one add writes, one Arrow table per table (ADD_TABLES). A late fact (stored
    already superseded by a newer stored fact) gets its `supersedes` link and SUPERSEDE event here."""
    sc, now = state.scope, state.now
    added = [f for f in state.facts if f.outcome == "added"]
    ex_id = state.extraction_run_id = state.extraction_run_id or new_id()
    ents, eposts, kposts = posting_rows(sc, [f.id for f in added], [f.entities for f in added],
                                        [f.terms for f in added], now=now)
    late = [f for f in added if f.superseded_by is not None]
    links = _links_of(added) + [(f.superseded_by[0], f.id, "supersedes") for f in late]
    events = [state_event(state, f.id, "ADD", None, f.text) for f in added]
    events += [state_event(state, f.id, "SUPERSEDE", f.text, None) for f in late]
    return {"entities": ents, "memories": memory_rows(state, added, ex_id, dim),
            "entity_postings": eposts, "keyword_postings": kposts, "memory_links": link_rows(sc, links, now),
            "history": history_table(history_policy, events) or HISTORY_SCHEMA.empty_table(),
            "messages": message_rows(sc, state.messages, now), "extraction_runs": extraction_run_row(state, ex_id)}


def ingest_log_rows(scope: Scope, entries: Sequence[tuple[str, str, str, str, str | None, str | None]],
                    *, ingest_id: str, now: dt.datetime) -> pa.Table:
    """`ingest_log` rows from (source_format, conversation_id, message_key, message_id,
    extraction_run_id, source_file): which source message became which stored message."""
    cols = ("source_format", "conversation_id", "message_key", "message_id", "extraction_run_id", "source_file")
    n = len(entries)
    return pa.table({**_ident(scope, n), **{c: pa.array([e[i] for e in entries], pa.string())
                                            for i, c in enumerate(cols)},
                     "ingest_id": pa.array([ingest_id] * n, pa.string()), "ingested_at": pa.array([now] * n, TS)})
