"""Step 1: normalise the messages and check identity and metadata."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstore.core.checks import message_too_long
from memstore.core.errors import InputError
from memstore.core.identity import check_metadata
from memstore.core.ids import new_id
from memstore.core.limits import check_add_size
from memstore.core.model import AddState, Message
from memstore.pipeline.message_shapes import describe_images, read_messages

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def normalise_messages(messages: Any, *, procedural: bool = False) -> list[Message]:
    """Accept a string, a message dict, or a list of message dicts in every shape mem0 takes
    (OpenAI chat format: content parts, tool calls, tool results): see pipeline/message_shapes.py.

    >>> [m.role for m in normalise_messages("I like tea")]
    ['user']
    >>> normalise_messages([{"role": "user"}])
    Traceback (most recent call last):
    ...
    memstore.core.errors.InputError: message #0 has no 'content' (and no tool call) — each message is {"role": "user"|"assistant"|..., "content": "..." or a list of content parts}
    """
    return read_messages(messages, procedural=procedural)


def validate_input(state: AddState, rt: Runtime) -> AddState:
    if state.options.request_limits:        # before any work that grows with the input (config `limits`)
        check_add_size([m.content for m in state.messages], state.metadata, rt.config.limits)
    state.metadata = check_metadata(state.metadata)
    if not state.messages:
        raise InputError("no messages to add", hint="pass at least one message")
    limit = state.options.max_message_chars or rt.config.limits.max_message_chars
    for i, m in enumerate(state.messages):
        too_long = message_too_long(m.content or "", limit)
        if too_long:       # the rule ingest applies too: refused, nothing stored
            raise InputError(f"message #{i} {too_long[len('message '):]}",
                             hint="split it into smaller messages or raise the config key limits.max_message_chars; "
                                  "nothing was stored")
    for m in state.messages:
        m.id = m.id or new_id()
        if m.created_at is None and state.timestamp is not None:
            m.created_at = state.timestamp
    describe_images(state.messages, rt)        # "[image]" -> "[image: ...]" when llm.vision is on
    return state

