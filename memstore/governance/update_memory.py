"""update(): new text and/or metadata for one memory, in one transaction. Identity never changes."""
from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from memstore.core.errors import DuplicateMemoryError, InvalidInputError, NotFoundError
from memstore.core.identity import Scope
from memstore.core.ids import content_hash
from memstore.core.rules.slots import detect_slot
from memstore.core.timeutil import utcnow
from memstore.store.database import registered
from memstore.store.history import HistoryEvent, history_table
from memstore.store.rows import posting_rows
from memstore.store.unit import write_unit
from memstore.store.write_values import vectors_table

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.database import Database


def update_memory(rt: Runtime, memory_id: str, text: str | None, metadata: dict | None,
                  expiration_date: dt.datetime | None, actor_id: str | None) -> dict[str, Any]:
    """See `Memory.update`: re-embeds and re-links changed text; refuses a text another current
    memory of the scope already holds (DuplicateMemoryError)."""
    db, cfg = rt.db, rt.config
    rows = db.dicts("queries/get_memory", {"id": memory_id})
    if not rows:
        raise NotFoundError(f"no memory with id {memory_id!r}",
                            hint="list the scope's memories with get_all() to find the id")
    old = rows[0]
    now = utcnow()
    new_text = old["memory"] if text is None else str(text).strip()
    if not new_text:
        raise InvalidInputError("update text is empty", hint="use delete() to remove a memory")
    changed = new_text != old["memory"]
    if changed:
        analysis = rt.nlp.analyze([new_text])[0]
        vec = rt.embedder.embed([new_text])
    else:
        analysis, vec = None, None
    meta = old["metadata"] if metadata is None else json.dumps(metadata, ensure_ascii=False, default=str)
    ident = {k: old[k] for k in ("user_id", "agent_id", "run_id")}
    with db.write_lock:  # checks and write see the same store: no other writer in between
        _check_still_writable(db, memory_id, old["scope_key"], new_text, changed, now)
        with write_unit(db, "update"):
            db.scopes_changed([old["scope_key"]])
            emb_table = vectors_table(vec, db.dim) if changed else \
                pa.table({"embedding": db.arrow("queries/memory_embedding", {"id": memory_id}).column(0)})
            with registered(db, "qvec", emb_table):
                db.run("queries/update_memory", {
                    "id": memory_id, "memory": new_text, "hash": content_hash(new_text),
                    "doc_len": sum(analysis.terms.values()) if analysis else old["doc_len"], "metadata": meta,
                    "expiration_date": expiration_date or old["expiration_date"], "now": now}, writes=True)
            if changed:
                _replace_postings(db, memory_id, old, new_text, analysis, now)
            hist = history_table(cfg.history, [HistoryEvent(
                memory_id, "UPDATE", old["memory"], new_text, scope_key=old["scope_key"], actor_id=actor_id,
                created_at=now, **ident)])
            if hist is not None:
                db.insert_rows("history", hist)
    return {"id": memory_id, "memory": new_text, "event": "UPDATE", "previous_memory": old["memory"],
            "message": "Memory updated successfully!"}


def _replace_postings(db: Database, memory_id: str, old: dict[str, Any], new_text: str, analysis: Any,
                      now: dt.datetime) -> None:
    """The edited memory's slot, entities and keyword postings, rebuilt from its new text (the
    rows come from memstore/store/rows.py, as add() builds them); entities no memory names any
    more are dropped."""
    found = detect_slot(new_text, speaker=old.get("attributed_to"))
    db.run("queries/update_memory_slot", {"id": memory_id, "subject": found and found.subject,
                                          "slot": found and found.slot, "slot_value": found and found.value},
           writes=True)
    old_entities = [r[0] for r in db.rows("queries/memory_entity_ids", {"id": memory_id})]
    db.run("queries/delete_entity_postings", {"id": memory_id}, writes=True)
    db.run("queries/delete_keyword_postings", {"id": memory_id}, writes=True)
    scope = Scope(old["user_id"], old["agent_id"], old["run_id"])
    ents, eposts, kposts = posting_rows(scope, [memory_id], [analysis.entities], [dict(analysis.terms)], now=now)
    db.upsert_entities(ents.arrow())
    db.insert_values("entity_postings", eposts.cols)
    if old_entities:
        db.run("queries/drop_unposted_entities", {"ids": old_entities}, writes=True)
    db.insert_values("keyword_postings", kposts.cols)


def _check_still_writable(db: Database, memory_id: str, scope_key: str, new_text: str, changed: bool,
                          now: dt.datetime) -> None:
    """The memory still exists, and no other current memory of its scope already says the new text
    (one content hash per scope, as add() keeps it)."""
    if not db.rows("queries/get_memory", {"id": memory_id}):
        raise NotFoundError(f"no memory with id {memory_id!r} (deleted while updating)")
    if changed:
        twins = [i for _, i in db.rows("queries/dedupe_hash", {
            "scope_key": scope_key, "hashes": [content_hash(new_text)], "now": now}) if i != memory_id]
        if twins:
            raise DuplicateMemoryError(f"memory {twins[0]} of the same scope already says {new_text!r}",
                                       hint=f"delete {memory_id} instead, or update {twins[0]}",
                                       memory_id=twins[0])
