"""update(): new text and/or metadata for one memory, in one transaction. Identity never changes."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa

from memstore.errors import DuplicateMemoryError, NotFoundError
from memstore.ids import content_hash, entity_id
from memstore.truth.slots import detect_slot
from memstore.store.database import registered, vectors_table
from memstore.write.history import HistoryEvent, history_table


def update_memory(rt: Any, memory_id: str, text: str | None, metadata: dict | None,
                  expiration_date: dt.datetime | None, actor_id: str | None) -> dict[str, Any]:
    """See `Memory.update`: re-embeds and re-links changed text; refuses a text another current
    memory of the scope already holds (DuplicateMemoryError)."""
    db, cfg = rt.db, rt.config
    rows = db.dicts("queries/get_memory", {"id": memory_id})
    if not rows:
        raise NotFoundError(f"no memory with id {memory_id!r}")
    old = rows[0]
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    new_text = old["memory"] if text is None else str(text).strip()
    if not new_text:
        raise ValueError("update text is empty: use delete() to remove a memory")
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
        with db.transaction("update") as con:
            if changed:
                emb_table = vectors_table(vec, db.dim)
            else:
                emb_table = pa.table({"embedding": db.arrow("emb", {"id": memory_id},
                                      sql="SELECT embedding FROM memories WHERE id = $id").column(0)})
            with registered(db, "qvec", emb_table):
                db.checkpoint("write:memories")
                db.run("queries/update_memory", {
                    "id": memory_id, "memory": new_text, "hash": content_hash(new_text),
                    "doc_len": sum(analysis.terms.values()) if analysis else old["doc_len"], "metadata": meta,
                    "expiration_date": expiration_date or old["expiration_date"], "now": now})
            if changed:
                found = detect_slot(new_text, speaker=old.get("attributed_to"))
                db.run("queries/update_memory_slot", {"id": memory_id, "subject": found and found.subject,
                                                      "slot": found and found.slot, "slot_value": found and found.value})
                db.checkpoint("write:entity_postings")
                old_entities = [r[0] for r in con.execute("SELECT DISTINCT entity_id FROM entity_postings WHERE memory_id = ?",
                                                          [memory_id]).fetchall()]
                con.execute("DELETE FROM entity_postings WHERE memory_id = ?", [memory_id])
                con.execute("DELETE FROM keyword_postings WHERE memory_id = ?", [memory_id])
                ents = {entity_id(e.norm): e for e in analysis.entities}
                db.checkpoint("write:entities")
                db.run("queries/insert_entities", {
                    "ids": list(ents), "names": [e.name for e in ents.values()], "norms": [e.norm for e in ents.values()],
                    "labels": [e.label for e in ents.values()], "created_at": now})
                n_e, n_t = len(ents), len(analysis.terms)
                base = {"scope_key": old["scope_key"], **ident}

                def scoped(n: int) -> dict[str, pa.Array]:  # identity columns repeated n times (NULLs stay typed)
                    return {k: pa.array([v] * n, pa.string()) for k, v in base.items()}
                db.insert_arrow("entity_postings", pa.table({
                    "entity_id": list(ents), "memory_id": [memory_id] * n_e,
                    **scoped(n_e)}))
                if old_entities:
                    db.run("queries/drop_unposted_entities", {"ids": old_entities})
                db.insert_arrow("keyword_postings", pa.table({
                    "memory_id": [memory_id] * n_t, "term": list(analysis.terms),
                    "tf": pa.array(list(analysis.terms.values()), pa.int32()), **scoped(n_t)}))
            hist = history_table(cfg.history, [HistoryEvent(
                memory_id, "UPDATE", old["memory"], new_text, scope_key=old["scope_key"], actor_id=actor_id,
                created_at=now, **ident)])
            if hist is not None:
                db.checkpoint("write:history")
                db.insert_rows("history", hist)
    return {"id": memory_id, "memory": new_text, "event": "UPDATE", "previous_memory": old["memory"],
            "message": "Memory updated successfully!"}


def _check_still_writable(db: Any, memory_id: str, scope_key: str, new_text: str, changed: bool,
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
