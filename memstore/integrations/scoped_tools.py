"""The memory tools an agent may call, bound to ONE scope: the logic behind the MCP server.

Plain Python over the public `Memory` API (so it works embedded and against `memstore serve`),
with no MCP import. Every call is confined to the bound scope: identity arguments must agree with
it, filters are ANDed with it, and a memory id of another scope is answered exactly as an unknown
id (its existence is not revealed).

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "t.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> alice, bob = ScopedTools(m, {"user_id": "alice"}), ScopedTools(m, {"user_id": "bob"})
>>> mid = alice.add_memory("I live in Lisbon", infer=False)["results"][0]["id"]
>>> [r["memory"] for r in alice.search_memories("Lisbon")["results"]]
['I live in Lisbon']
>>> bob.search_memories("Lisbon")["results"]
[]
>>> bob.get_memory(mid)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
memstore.core.errors.ScopeViolation: no memory with id '...' in this scope — list ids with get_memories or search_memories
>>> m.close()
"""
from __future__ import annotations

from typing import Any

from memstore.core.errors import (
    MemstoreError,
    ScopeViolation,
)
from memstore.core.read_context import quiet
from memstore.core.scope_rule import IDENTITY_KEYS, canonical_scope, confine_scope, filter_within

# What a model needs of a memory; the rest (hash, provenance, validity fields) stays out of its context.
_KEEP = ("id", "memory", "score", "created_at", "updated_at")


def compact(rec: dict[str, Any]) -> dict[str, Any]:
    """A memory record cut to what a model needs (metadata and status only when they say something).

    >>> compact({"id": "1", "memory": "x", "hash": "h", "metadata": {}, "status": "current", "created_at": "t"})
    {'id': '1', 'memory': 'x', 'created_at': 't'}
    """
    out = {k: rec[k] for k in _KEEP if rec.get(k) is not None}
    if isinstance(out.get("score"), float):
        out["score"] = round(out["score"], 4)
    if rec.get("metadata"):
        out["metadata"] = rec["metadata"]
    if rec.get("status", "current") != "current":
        out["status"] = rec["status"]
        if rec.get("superseded_by"):
            out["superseded_by"] = rec["superseded_by"]
    for key in ("agent_id", "run_id"):
        if rec.get(key) is not None:
            out[key] = rec[key]
    return out


class ScopedTools:
    """The tools of one scope (e.g. {"user_id": "alice"}) over a `Memory`-like object."""

    def __init__(self, memory: Any, scope: dict[str, str], *, actor_id: str | None = None) -> None:
        scope = {k: v for k, v in scope.items() if v}
        if not scope or set(scope) - set(IDENTITY_KEYS):
            raise ScopeViolation(f"a tool scope needs user_id, agent_id or run_id, got {sorted(scope)}",
                                 hint="start the server with --user NAME")
        scope = canonical_scope(scope)      # the one scope rule (core/scope_rule.py)
        self.memory, self.scope, self.actor_id = memory, scope, actor_id

    # -- scope checks --------------------------------------------------------------------------
    def _who(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.scope.items())

    def identity(self, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None) -> dict[str, str]:
        """The bound scope, narrowed by the identity arguments of a call (never widened or moved)."""
        def refuse(key: str, value: Any) -> ScopeViolation:
            return ScopeViolation(f"this memory server is bound to {self._who()}; {key}={value!r} is another scope",
                                  hint=f"leave {key} out: it is filled in for you")

        return confine_scope({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, self.scope, refuse)

    def filters(self, filters: dict[str, Any] | None, **identity: str | None) -> dict[str, Any]:
        """Caller filters ANDed under the bound scope; naming another scope anywhere is refused."""
        scope = self.identity(**identity)
        if filters is None or filters == {}:
            return scope
        if not isinstance(filters, dict):
            raise ScopeViolation(f"filters must be an object, got {type(filters).__name__}")
        def refuse(key: str, value: Any) -> ScopeViolation:
            return ScopeViolation(f"this memory server is bound to {self._who()}; the filter names {key}={value!r}",
                                  hint=f"leave {key} out of filters: it is filled in for you")

        filter_within(filters, self.scope, refuse)
        return {**scope, "AND": [filters]}

    def owned(self, memory_id: str) -> dict[str, Any]:
        """The memory if it lies inside the bound scope; otherwise the same answer as an unknown id."""
        rec = self.memory.get(memory_id) if isinstance(memory_id, str) and memory_id else None
        if rec is None or any(rec.get(k) != v for k, v in self.scope.items()):
            raise ScopeViolation(f"no memory with id {memory_id!r} in this scope",
                                 hint="list ids with get_memories or search_memories")
        return rec

    # -- tools ---------------------------------------------------------------------------------
    def add_memory(self, text: str | None = None, messages: list[dict[str, Any]] | None = None, *,
                   user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                   app_id: str | None = None, metadata: dict[str, Any] | None = None,
                   infer: bool = True) -> dict[str, Any]:
        content: Any = messages or text
        if not content:
            raise ScopeViolation("nothing to store", hint="pass `text` (a sentence) or `messages`")
        meta = dict(metadata or {})
        if app_id:
            meta.setdefault("app_id", app_id)
        out = self.memory.add(content, **self.identity(user_id, agent_id, run_id), metadata=meta or None,
                              infer=infer, actor_id=self.actor_id)
        ex = out.get("extraction") or {}
        results = [{k: r[k] for k in ("id", "memory", "event") if k in r} for r in out["results"]]
        if not results and not ex.get("deduplicated"):
            raise NothingStoredError(_nothing_stored(ex), hint="state the fact as a sentence about the user "
                                     "(e.g. 'I keep three beehives on my roof')")
        answer = {"results": results, "deduplicated": ex.get("deduplicated", 0)}
        if not results:
            answer["message"] = _nothing_stored(ex)      # already known: not an error, but said
        return answer

    def search_memories(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None,
                        threshold: float | None = None) -> dict[str, Any]:
        out = self.memory.search(query, filters=self.filters(filters), top_k=int(limit or 10), threshold=threshold)
        return {"results": [compact(r) for r in out["results"]]}

    def get_memories(self, filters: dict[str, Any] | None = None, page: int | None = None,
                     page_size: int | None = None) -> dict[str, Any]:
        page, size = max(1, int(page or 1)), max(1, min(int(page_size or 50), 500))
        rows = self.memory.get_all(filters=self.filters(filters), top_k=page * size + 1)["results"]
        chunk = rows[(page - 1) * size: page * size]
        return {"results": [compact(r) for r in chunk], "page": page, "page_size": size,
                "has_more": len(rows) > page * size}

    def get_memory(self, memory_id: str) -> dict[str, Any]:
        return compact(self.owned(memory_id))

    def update_memory(self, memory_id: str, text: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        with quiet():       # the write's own check, not a read (the audit of reads)
            self.owned(memory_id)
        out = self.memory.update(memory_id, text=text, metadata=metadata, actor_id=self.actor_id)
        return {"id": memory_id, "memory": out.get("memory", text), "event": "UPDATE",
                "previous_memory": out.get("previous_memory")}

    def delete_memory(self, memory_id: str) -> dict[str, Any]:
        with quiet():
            self.owned(memory_id)
        self.memory.delete(memory_id, actor_id=self.actor_id)
        return {"id": memory_id, "deleted": True}

    def delete_memories(self, memory_ids: list[str]) -> dict[str, Any]:
        with quiet():
            for mid in memory_ids:           # check them all first: all or none
                self.owned(mid)
        for mid in memory_ids:
            self.memory.delete(mid, actor_id=self.actor_id)
        return {"deleted": len(memory_ids), "ids": list(memory_ids)}

    def delete_all_memories(self, user_id: str | None = None, agent_id: str | None = None,
                            run_id: str | None = None) -> dict[str, Any]:
        out = self.memory.delete_all(**self.identity(user_id, agent_id, run_id), actor_id=self.actor_id)
        return {"deleted": out.get("deleted", 0)}

    def list_entities(self) -> dict[str, Any]:
        rows = self.memory.get_all(filters=dict(self.scope), top_k=100_000)["results"]
        counts: dict[str, dict[str, int]] = {"users": {}, "agents": {}, "runs": {}}
        for r in rows:
            for key, group in (("user_id", "users"), ("agent_id", "agents"), ("run_id", "runs")):
                if r.get(key):
                    counts[group][r[key]] = counts[group].get(r[key], 0) + 1
        return {g: [{"id": k, "memories": n} for k, n in sorted(c.items())] for g, c in counts.items()}

    def memory_history(self, memory_id: str) -> dict[str, Any]:
        self.owned(memory_id)
        keep = ("event", "old_memory", "new_memory", "created_at", "actor_id")
        return {"memory_id": memory_id,
                "events": [{k: e.get(k) for k in keep if e.get(k) is not None} for e in self.memory.history(memory_id)]}

    def what_changed(self, subject: str | None = None, limit: int = 20) -> dict[str, Any]:
        frame = self.memory.timeline(**self.scope)
        rows = frame.to_dicts() if hasattr(frame, "to_dicts") else list(frame)
        want = (subject or "").strip().lower()
        changes = []
        for r in rows:
            if r.get("status") != "superseded":
                continue
            if want and want not in (r.get("subject") or "").lower() and want not in r["memory"].lower():
                continue
            changes.append({k: v for k, v in (
                ("was", r["memory"]), ("now", r.get("superseded_by_memory")), ("subject", r.get("subject")),
                ("slot", r.get("slot")), ("valid_from", _iso(r.get("valid_from"))),
                ("changed_at", _iso(r.get("valid_to") or r.get("invalidated_at"))),
                ("id", r["id"]), ("superseded_by", r.get("superseded_by"))) if v is not None})
        changes.sort(key=lambda c: c.get("changed_at") or "", reverse=True)
        return {"changes": changes[: max(1, int(limit))]}

    def forget_me(self, confirm: bool = False) -> dict[str, Any]:
        if confirm is not True:
            raise ScopeViolation("forget_me erases every memory, message and history row of this scope, irreversibly",
                                 hint="call it again with confirm=true only if the user asked to be forgotten")
        receipt = self.memory.forget(**self.scope, actor_id=self.actor_id)
        removed = receipt.get("rows_removed") or {}
        return {"erased": True, "verified": receipt.get("verified"), "receipt_id": receipt.get("id"),
                "memories_removed": removed.get("memories", 0), "rows_removed": sum(removed.values())}


def _iso(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


class NothingStoredError(MemstoreError):  # raised through MCP as a ToolError: isError=true
    """add_memory stored nothing (no fact found, or every fact is already stored)."""


def _nothing_stored(extraction: dict[str, Any]) -> str:
    """Why an add stored nothing, from its extraction report.

    >>> _nothing_stored({"deduplicated": 1})
    'nothing was stored: every fact in it is already stored (1 duplicate)'
    >>> _nothing_stored({"facts": 0})
    'nothing was stored: no fact about the user was found in the text'
    """
    dup = extraction.get("deduplicated") or 0
    if dup:
        return f"nothing was stored: every fact in it is already stored ({dup} duplicate{'s' if dup > 1 else ''})"
    return "nothing was stored: no fact about the user was found in the text"
