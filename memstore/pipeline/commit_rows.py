"""Step 8: hand the add's rows to the writer, then close the validity of what it supersedes (which
may be a fact of the same add: "I live in Boston" said before "I moved to Seattle") and prune
old add() messages. The writer decides when rows reach the store (now, or once for its whole
unit); all of it commits with the unit's transaction or none of it does."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memstore.core.model import AddState
from memstore.core.rules.validity import fact_valid_from
from memstore.store.history import history_rows, state_event

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.writer import Writer


def commit_rows(state: AddState, rt: Runtime, w: Writer) -> AddState:
    t0 = time.perf_counter()
    state.results = [{"id": f.id, "memory": f.text, "event": "ADD"} for f in state.facts if f.outcome == "added"]
    if not state.infer:
        # a raw message already stored: the memory kept, and this occurrence recorded as one more
        # of its sources (memory_sources) -- mem0's answer lists it, as NONE, so nothing is hidden
        state.results += [{"id": f.duplicate_of, "memory": f.text, "event": "NONE", "deduplicated": True,
                           "source_message_ids": list(f.source_message_ids), "metadata": state.metadata or {}}
                          for f in state.facts if f.outcome.startswith("duplicate") and f.duplicate_of]
    w.write(state, state.tables)
    _close_superseded(state, rt, w)
    if rt.config.messages_kept is not None and not state.options.keep_all_messages:
        w.prune(state.scope.key, state.tables["messages"], rt.config.messages_kept)
    state.timings["store"] = time.perf_counter() - t0
    return state


def _close_superseded(state: AddState, rt: Runtime, w: Writer) -> None:
    """Close the validity of what the new facts supersede, with a SUPERSEDE event for each."""
    events = []
    for f in state.facts:
        if f.outcome != "added" or not (f.supersedes or f.narrows):
            continue
        params = {"at": fact_valid_from(f, state), "new_id": f.id, "now": state.now,
                  "scope_key": state.scope.key}
        closed = w.close("supersede", ids=list(dict.fromkeys(f.supersedes)), **params) if f.supersedes else []
        if f.narrows:       # a late fact: older facts whose interval it falls in now end where it begins
            closed += w.close("narrow", ids=f.narrows, **params)
        for mid, text in closed:
            events.append(state_event(state, mid, "SUPERSEDE", text, f.text, f.source_message_ids))
            state.results.append({"id": mid, "memory": text, "event": "SUPERSEDE", "superseded_by": f.id})
    rows = history_rows(rt.config.history, events)
    if rows is not None and rows.num_rows:
        w.append({"history": rows})
