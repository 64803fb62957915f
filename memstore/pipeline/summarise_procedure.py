"""Procedural memory (mem0's `memory_type="procedural_memory"`): ONE memory that summarises an
agent's run (its task, then each action with its result, in order), so that the agent can pick
the task up again. With an LLM, the model writes the summary (mem0's documented intent: every
action and its output recorded, numbered, nothing else); offline, the same layout is filled in
deterministically from the messages. The memory's metadata carries `memory_type:
"procedural_memory"`, as mem0 marks it.

>>> from memstore.core.model import Message
>>> print(offline_summary([Message("user", "Book a flight from SFO to NYC"),
...                        Message("assistant", "[called search_flights({\\"from\\": \\"SFO\\"})]"),
...                        Message("tool", "3 flights found", name="search_flights"),
...                        Message("assistant", "Booked UA 512.")]))
## Summary of the agent's execution history
**Task Objective**: Book a flight from SFO to NYC
**Progress Status**: 2 agent actions recorded.
1. **Agent Action**: [called search_flights({"from": "SFO"})]
   **Action Result** (search_flights): 3 flights found
2. **Agent Action**: Booked UA 512.
"""
from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from memstore.core.errors import LLMError
from memstore.core.model import AddState, Extraction, Fact, Message

if TYPE_CHECKING:
    from memstore.runtime import Runtime

PROCEDURAL = "procedural_memory"
LLM_PROMPT_VERSION = "procedural-llm-1"
OFFLINE_PROMPT_VERSION = "procedural-offline-1"

# mem0's PROCEDURAL_MEMORY_SYSTEM_PROMPT (mem0/configs/prompts.py), its intent in fewer words.
SYSTEM_PROMPT = """You summarise an AI agent's execution history for its procedural memory: the summary must
hold every detail the agent needs to continue the task without ambiguity.
Write:
## Summary of the agent's execution history
**Task Objective**: the overall goal the agent is working on.
**Progress Status**: how far it got (steps or milestones completed).
Then number the agent's actions in the order they happened. Each numbered step holds:
  **Agent Action**: exactly what the agent did, with its parameters (tool called, URL opened, ...).
  **Action Result**: the exact, unaltered output of that action (data, responses, error messages).
  **Key Findings** / **Errors & Challenges** / **Current Context** where there is something to say.
Record every output verbatim; keep numbers, URLs and error messages exact.
Answer with the summary only, no preamble or commentary."""
FINAL_INSTRUCTION = "Create procedural memory of the above conversation."   # mem0's closing user turn


def summarise_procedure(state: AddState, rt: Runtime) -> Extraction:
    """The extraction of a procedural add: one fact, the summary of the run."""
    t0 = time.perf_counter()
    llm = rt.config.llm.provider != "heuristic"
    if llm:
        chat = [{"role": "system", "content": state.prompt or SYSTEM_PROMPT},
                {"role": "user", "content": "The agent's execution history:\n\n" + transcript(state.messages)},
                {"role": "user", "content": FINAL_INSTRUCTION}]
        text = clean_answer(rt.extractor.complete(chat, purpose="procedural summary"))
        if not text:
            raise LLMError("the LLM returned no text for the procedural summary", retryable=True,
                           hint="nothing was stored; retry, or check llm.model")
    else:
        text = offline_summary(state.messages)
    state.metadata = {**state.metadata, "memory_type": PROCEDURAL}
    fact = Fact(text=text, attributed_to=state.scope.agent_id, role="assistant", slot_checked=True,
                source_message_ids=[m.id for m in state.messages if m.id],
                valid_from=next((m.created_at for m in reversed(state.messages) if m.created_at), None))
    return Extraction(status="ok", facts=[fact], extractor="llm" if llm else "procedural",
                      model=rt.config.llm.model if llm else None,
                      prompt_version=LLM_PROMPT_VERSION if llm else OFFLINE_PROMPT_VERSION,
                      latency_ms=(time.perf_counter() - t0) * 1000)


def transcript(messages: list[Message]) -> str:
    """The run as lines "role: text" (a tool's answer names the tool)."""
    def who(m: Message) -> str:
        if m.context_only:
            return f"tool result{f' ({m.name})' if m.name else ''}"
        return f"{m.role}{f' ({m.name})' if m.name else ''}"
    return "\n".join(f"{who(m)}: {m.content}" for m in messages)


def clean_answer(text: str) -> str:
    """The model's answer without a ``` fence or a <think> block (as mem0's remove_code_blocks)."""
    text = re.sub(r"<think>.*?</think>", "", text or "", flags=re.DOTALL).strip()
    fenced = re.fullmatch(r"```[A-Za-z0-9]*\n(.*?)\n```", text, re.DOTALL)
    return (fenced.group(1) if fenced else text).strip()


def offline_summary(messages: list[Message]) -> str:
    """The summary without an LLM: the first user turn is the objective; each assistant turn is
    a numbered action, followed by the tool results after it (verbatim); later user turns are
    numbered steps of their own."""
    users = [m for m in messages if m.role == "user" and m.content.strip()]
    objective = " ".join(users[0].content.split()) if users else "(not stated)"
    steps: list[list[str]] = []
    actions = 0
    for m in messages:
        text = m.content.strip()
        if not text or (users and m is users[0]) or m.role in ("system", "developer"):
            continue
        if m.context_only:
            label = f"**Action Result**{f' ({m.name})' if m.name else ''}: {text}"
            if steps and steps[-1][0].startswith("**Agent Action**"):
                steps[-1].append(label)
            else:
                steps.append([label])
        elif m.role == "user":
            steps.append([f"**User**: {text}"])
        else:
            actions += 1
            steps.append([f"**Agent Action**: {text}"])
    lines = ["## Summary of the agent's execution history", f"**Task Objective**: {objective}",
             f"**Progress Status**: {actions} agent action{'s' if actions != 1 else ''} recorded."]
    for i, step in enumerate(steps, 1):
        lines.append(f"{i}. {step[0]}")
        lines += [f"   {s}" for s in step[1:]]
    return "\n".join(lines)


def check_memory_type(memory_type: object, agent_id: object) -> str | None:
    """add()'s `memory_type`: None, or "procedural_memory" with an agent_id (as mem0 requires).

    >>> check_memory_type("procedural_memory", "travel-agent")
    'procedural_memory'
    >>> check_memory_type("semantic_memory", "travel-agent")
    Traceback (most recent call last):
    ...
    memstore.core.errors.ArgumentError: memory_type 'semantic_memory' is not supported — pass memory_type="procedural_memory" (with agent_id=) to summarise an agent's run, or leave it out for facts
    """
    from memstore.core.errors import ArgumentError

    if memory_type is None:
        return None
    if memory_type != PROCEDURAL:
        raise ArgumentError(f"memory_type {memory_type!r} is not supported",
                            hint='pass memory_type="procedural_memory" (with agent_id=) to summarise an agent\'s '
                                 'run, or leave it out for facts', argument="memory_type")
    if not agent_id:
        raise ArgumentError('memory_type="procedural_memory" needs agent_id=',
                            hint="a procedural memory is the agent's own: add(messages, agent_id=\"...\", "
                                 "memory_type=\"procedural_memory\")", argument="agent_id")
    return PROCEDURAL
