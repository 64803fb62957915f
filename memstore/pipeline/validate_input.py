"""Step 1: normalise the messages and check identity and metadata."""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from memstore.core.errors import InvalidInputError
from memstore.core.checks import check_text
from memstore.core.ids import new_id
from memstore.core.identity import check_metadata
from memstore.core.model import AddState, Message
from memstore.core.timeutil import parse_time
from memstore.core.errors import InputError  # noqa: F401  (defined with every error class)

if TYPE_CHECKING:
    from memstore.runtime import Runtime


def normalise_messages(messages: Any) -> list[Message]:
    """Accept a string, a message dict, or a list of message dicts (mem0's shapes).

    >>> [m.role for m in normalise_messages("I like tea")]
    ['user']
    >>> normalise_messages([{"role": "user"}])
    Traceback (most recent call last):
    ...
    memstore.core.errors.InputError: message #0 has no 'content' string — each message is {"role": "user"|"assistant"|..., "content": "..."}
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise InputError(f"messages must be a string, a dict or a list of dicts, got {type(messages).__name__}")
    hint = 'each message is {"role": "user"|"assistant"|..., "content": "..."}'
    out = []
    for n, m in enumerate(messages):
        if isinstance(m, Message):
            out.append(m)
            continue
        if not isinstance(m, dict):
            raise InputError(f"message #{n} is {type(m).__name__}, expected a dict", hint=hint, index=n)
        content = m.get("content")
        if not isinstance(content, str):
            raise InputError(f"message #{n} has no 'content' string", hint=hint, index=n)
        check_text(content, f"messages[{n}].content", allow_empty=True)
        role = m.get("role", "user")
        if not isinstance(role, str) or not role:
            raise InputError(f"message #{n} has an invalid role {role!r}", hint=hint, index=n)
        created = m.get("created_at") or m.get("timestamp")
        out.append(Message(role=role, content=content, name=m.get("name"),
                           created_at=parse_time(created, f"message #{n} created_at") if created else None,
                           source_message_id=m.get("id")))
    return out


def validate_input(state: AddState, rt: Runtime) -> AddState:
    state.metadata = check_metadata(state.metadata)
    if not state.messages:
        raise InputError("no messages to add", hint="pass at least one message")
    for m in state.messages:
        m.id = m.id or new_id()
        if m.created_at is None and state.timestamp is not None:
            m.created_at = state.timestamp
    return state


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
