"""Step 7: turn the state into one Arrow table per projection (pure; nothing is written here)."""
from __future__ import annotations

import datetime as dt
import json
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.ids import entity_id, new_id
from memstore.pipeline.types import AddState
from memstore.store.database import vectors_table
from memstore.write.history import HISTORY_SCHEMA, history_table, state_event

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def _ts(rows: int) -> pa.DataType:
    return pa.timestamp("us")


def _message_times(msgs: list, now: dt.datetime) -> list[dt.datetime]:
    """Each message's time; messages of one batch that share a time are spaced 1 µs apart in the
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


def build_rows(state: AddState, rt: Runtime) -> AddState:
    t0 = time.perf_counter()
    db, cfg, sc, now = rt.db, rt.config, state.scope, state.now
    ident = {"user_id": sc.user_id, "agent_id": sc.agent_id, "run_id": sc.run_id}
    added = [f for f in state.facts if f.outcome == "added"]
    meta_json = json.dumps(state.metadata, ensure_ascii=False, default=str) if state.metadata else None
    run_id = state.extraction_run_id = state.extraction_run_id or new_id()

    def rep(value: Any, n: int) -> list:
        return [value] * n

    n = len(added)
    mem = vectors_table([f.embedding for f in added], db.dim,
                        id=[f.id for f in added], memory=[f.text for f in added], hash=[f.hash for f in added],
                        **{k: pa.array(rep(v, n), pa.string()) for k, v in ident.items()},
                        actor_id=pa.array(rep(state.actor_id, n), pa.string()),
                        scope_key=rep(sc.key, n), role=pa.array([f.role for f in added], pa.string()),
                        attributed_to=pa.array([f.attributed_to for f in added], pa.string()),
                        metadata=pa.array(rep(meta_json, n), pa.string()),
                        doc_len=pa.array([sum(f.terms.values()) for f in added], pa.int32()),
                        created_at=pa.array(rep(now, n), pa.timestamp("us")),
                        updated_at=pa.array(rep(now, n), pa.timestamp("us")),
                        expiration_date=pa.array([f.expires_at or state.expiration_date for f in added],
                                                         pa.timestamp("us")),
                        valid_from=pa.array([f.valid_from or state.timestamp or now for f in added], pa.timestamp("us")),
                        source_message_ids=pa.array([f.source_message_ids for f in added], pa.list_(pa.string())),
                        extraction_run_id=rep(run_id, n))
    tables: dict[str, pa.Table] = {"memories": mem}

    ents: dict[str, tuple] = {}
    post_rows: list[tuple[str, str]] = []
    term_rows: list[tuple[str, str, int]] = []
    for f in added:
        for e in f.entities:
            eid = entity_id(e.norm)
            ents.setdefault(eid, (e.name, e.norm, e.label))
            post_rows.append((eid, f.id))
        term_rows.extend((f.id, t, c) for t, c in f.terms.items())
    tables["entities"] = pa.table({"id": list(ents), "name": [v[0] for v in ents.values()],
                                   "norm": [v[1] for v in ents.values()], "label": [v[2] for v in ents.values()],
                                   "created_at": pa.array(rep(now, len(ents)), pa.timestamp("us"))})

    def scoped(cols: dict[str, list], count: int) -> pa.Table:
        cols = dict(cols, scope_key=rep(sc.key, count))
        cols.update({k: pa.array(rep(v, count), pa.string()) for k, v in ident.items()})
        return pa.table(cols)

    tables["entity_postings"] = scoped({"entity_id": [p[0] for p in post_rows],
                                        "memory_id": [p[1] for p in post_rows]}, len(post_rows))
    tables["keyword_postings"] = scoped({"memory_id": [t[0] for t in term_rows], "term": [t[1] for t in term_rows],
                                         "tf": pa.array([t[2] for t in term_rows], pa.int32())}, len(term_rows))
    links = [(f.id, dst, "related") for f in added for dst in dict.fromkeys(f.linked_ids) if dst not in f.supersedes]
    links += [(f.id, dst, "supersedes") for f in added for dst in dict.fromkeys(f.supersedes + f.narrows)]
    tables["memory_links"] = scoped({"src_id": [l[0] for l in links], "dst_id": [l[1] for l in links],
                                     "kind": [l[2] for l in links],
                                     "created_at": pa.array(rep(now, len(links)), pa.timestamp("us"))}, len(links))

    tables["history"] = history_table(cfg.history, [state_event(state, f.id, "ADD", None, f.text) for f in added]) \
        or HISTORY_SCHEMA.empty_table()
    msgs = state.messages
    tables["messages"] = scoped({"id": [m.id for m in msgs], "role": [m.role for m in msgs],
                                 "name": pa.array([m.name for m in msgs], pa.string()),
                                 "content": [m.content for m in msgs],
                                 "created_at": pa.array(_message_times(msgs, now), pa.timestamp("us")),
                                 "source_file": pa.array([m.source_file for m in msgs], pa.string()),
                                 "source_conversation": pa.array([m.source_conversation for m in msgs], pa.string()),
                                 "source_message_id": pa.array([m.source_message_id for m in msgs], pa.string())},
                                len(msgs))
    ex = state.extraction
    # No memory ids here: a deleted memory must leave no row naming it outside history. An added
    # fact is found again through memories.extraction_run_id + hash.
    facts_json = json.dumps([{"text": f.text, "hash": f.hash, "outcome": f.outcome, "n_linked": len(f.linked_ids),
                              "n_supersedes": len(f.supersedes), "attributed_to": f.attributed_to}
                             for f in state.facts], ensure_ascii=False)
    tables["extraction_runs"] = scoped({
        "id": [run_id], "extractor": [ex.extractor], "model": pa.array([ex.model], pa.string()),
        "prompt_version": pa.array([ex.prompt_version], pa.string()),
        "input_message_ids": pa.array([[m.id for m in msgs]], pa.list_(pa.string())),
        "status": [ex.status], "n_facts": pa.array([len(state.facts)], pa.int32()),
        "n_added": pa.array([len(added)], pa.int32()),
        "n_deduplicated": pa.array([sum(f.outcome.startswith("duplicate") for f in state.facts)], pa.int32()),
        "n_linked": pa.array([len(links)], pa.int32()), "facts": [facts_json],
        "error": pa.array([ex.error], pa.string()), "latency_ms": [float(ex.latency_ms)],
        "raw_answer": pa.array([ex.raw if ex.status == "malformed" else None], pa.string()),
        "created_at": pa.array([now], pa.timestamp("us"))}, 1)
    state.tables = tables
    state.timings["build"] = time.perf_counter() - t0
    return state
