"""Step 3: ONE extractor call (or, with infer=False, the messages themselves become memories)."""
from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from memstore.core.model import AddState, Extraction, Fact
from memstore.pipeline.summarise_procedure import PROCEDURAL, summarise_procedure

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def speaker_name(state: AddState) -> str:
    """Display name for the user: a message's `name`, else a name-like user_id, else 'User'."""
    for m in state.messages:
        if m.role == "user" and m.name:
            return m.name
    uid = state.scope.user_id or ""
    # a name-like id of two letters or more ("u" or "x" is a handle, not a name: "U moved to Porto")
    return uid[:1].upper() + uid[1:] if re.fullmatch(r"[A-Za-z][A-Za-z .'-]{1,40}", uid) else "User"


def extract_facts(state: AddState, rt: Runtime, extractor: Any = None) -> AddState:
    """`extractor`: the one to use instead of the runtime's (ingest feeds the offline one docs it
    parsed in bulk)."""
    t0 = time.perf_counter()
    if state.memory_type == PROCEDURAL:
        state.extraction = summarise_procedure(state, rt)
    elif not state.infer:       # each message a memory; a tool's answer is context, not a memory
        facts = [Fact(text=m.content.strip(), attributed_to=m.name or (speaker_name(state) if m.role == "user" else m.role),
                      role=m.role, source_message_ids=[m.id], valid_from=m.created_at)
                 for m in state.messages if m.content.strip() and not m.context_only]
        state.extraction = Extraction(status="ok" if facts else "empty", facts=facts, extractor="none")
    else:
        ex = extractor if extractor is not None else rt.extractor
        # the LLM reads the recent messages; the offline extractor joins a reply with the question before it
        state.extraction = ex.extract(state.messages, state.context_memories, speaker=speaker_name(state),
                                      prompt=state.prompt, recent=state.context_messages)
    state.facts = list(state.extraction.facts)
    state.timings["llm"] = time.perf_counter() - t0
    return state
