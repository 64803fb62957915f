"""A person's decision on a contradiction: keep one memory, supersede others (and/or mark some as
compatible with it), recorded in history with the actor — all in ONE transaction.

Superseding closes the old memory's validity at the kept memory's valid_from (never before the old
one began: keeping an OLDER fact over a newer one means the newer was never true, an empty
interval), sets superseded_by, and writes a `supersedes` link. `dismiss` writes a `compatible` link
instead, so the pair leaves the contradictions view while both stay current.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstore.core.errors import (
    NotFoundError,
    ResolveError,
)
from memstore.core.identity import Scope
from memstore.core.timeutil import utcnow
from memstore.store.history import HistoryEvent, history_table
from memstore.store.rows import link_rows
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.core.config import MemoryConfig
    from memstore.runtime import Runtime
    from memstore.store.database import Database


def _ids(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, set)) or not all(isinstance(v, str) and v for v in value):
        raise ResolveError(f"{what} must be a memory id or a list of memory ids, got {value!r}")
    return list(dict.fromkeys(value))


def resolve_memories(rt: Runtime, keep: str, supersede: Any = None, dismiss: Any = None,
                     actor_id: str | None = None) -> dict[str, Any]:
    """Keep `keep`; supersede the ids in `supersede`; mark the ids in `dismiss` compatible with it."""
    if not isinstance(keep, str) or not keep:
        raise ResolveError(f"keep must be a memory id, got {keep!r}")
    sup, dis = _ids(supersede, "supersede"), _ids(dismiss, "dismiss")
    if not sup and not dis:
        raise ResolveError("nothing to resolve", hint="pass supersede=[ids] and/or dismiss=[ids]")
    db, cfg = rt.db, rt.config
    with db.write_lock:     # the checks and the writes see the same store
        rows = {r["id"]: r for r in db.dicts("queries/memories_validity", {"ids": [keep, *sup, *dis]})}
        for mid in [keep, *sup, *dis]:      # an unknown id first (404), then how the known ones relate
            if mid not in rows:
                raise NotFoundError(f"no memory with id {mid!r} — list candidates with m.contradictions(user_id=...)")
        both = set(sup) & set(dis)
        if keep in sup or keep in dis or both:
            bad = keep if keep in sup or keep in dis else sorted(both)[0]
            raise ResolveError(f"memory {bad!r} is given twice", hint="keep, supersede and dismiss must not overlap")
        kept = rows[keep]
        for mid in [keep, *sup, *dis]:
            r = rows[mid]
            if r["scope_key"] != kept["scope_key"]:
                raise ResolveError(f"memory {mid!r} belongs to another scope than {keep!r}",
                                   hint="resolve only decides between memories of one user/agent/run")
            if r["invalidated_at"] is not None:
                raise ResolveError(f"memory {mid!r} is already superseded (by {r['superseded_by']!r})",
                                   hint="resolve decides between current memories; see m.timeline(...)")
        _write(db, cfg, kept, rows, keep, sup, dis, actor_id)
    return {"kept": keep, "superseded": sup, "dismissed": dis, "actor_id": actor_id,
            "message": f"kept {keep}; superseded {len(sup)}, marked {len(dis)} compatible"}


def _write(db: Database, cfg: MemoryConfig, kept: dict[str, Any], rows: dict[str, dict[str, Any]], keep: str, sup: list[str],
           dis: list[str], actor_id: str | None) -> None:
    now = utcnow()
    with write_unit(db, "resolve"):
        db.scopes_changed([kept["scope_key"]])
        closed = db.rows("queries/supersede_memories", {
            "at": kept["valid_from"], "new_id": keep, "now": now, "ids": sup, "scope_key": kept["scope_key"]},
            writes=True)
        if len(closed) != len(sup):     # cannot happen under the write lock; never half-resolve
            raise ResolveError("a memory changed during resolve", hint="nothing was changed; retry")
        links = [(keep, mid, "supersedes") for mid in sup] + [(keep, mid, "compatible") for mid in dis]
        db.insert_values("memory_links", link_rows(Scope(kept["user_id"], kept["agent_id"], kept["run_id"]), links,
                                                   now).cols)
        ident = {k: kept[k] for k in ("scope_key", "user_id", "agent_id", "run_id")}
        events = [(keep, None, kept["memory"])] + [(mid, rows[mid]["memory"], kept["memory"]) for mid in sup] \
            + [(mid, None, None) for mid in dis]
        hist = history_table(cfg.history, [HistoryEvent(mid, "RESOLVE", old_text, new_text, actor_id=actor_id,
                                                        created_at=now, **ident) for mid, old_text, new_text in events])
        if hist is not None:
            db.insert_arrow("history", hist)
