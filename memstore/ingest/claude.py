"""Claude data export (`conversations.json`, extracted or inside the export .zip).

Each conversation has `chat_messages` in order, `sender` human/assistant and ISO `created_at`.
A message's text is its `text` content blocks (tool use, tool results and thinking blocks are not
chat text); older exports only have the flat `text` field.

>>> conv = {"uuid": "c1", "name": "Intro", "chat_messages": [
...   {"uuid": "m1", "sender": "human", "text": "I live in Austin", "created_at": "2024-01-15T10:00:00Z"},
...   {"uuid": "m2", "sender": "assistant", "created_at": "2024-01-15T10:00:05Z",
...    "content": [{"type": "text", "text": "Nice!"}, {"type": "tool_use", "name": "search"}]}]}
>>> c = parse_conversation(conv, "conversations.json", [])
>>> [(m.role, m.content, str(m.created_at)) for m in c.messages]
[('user', 'I live in Austin', '2024-01-15 10:00:00'), ('assistant', 'Nice!', '2024-01-15 10:00:05')]
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from memstore.ingest.json_exports import lenient_time, stream_conversations
from memstore.ingest.types import (
    DEFAULT_MAX_MESSAGE_CHARS,
    Problem,
    SourceConversation,
    clean_message,
)

FORMAT = "claude"
_SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}


def read_claude(path: str | os.PathLike, problems: list[Problem], *,
                max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS, **_: Any) -> Iterator[SourceConversation]:
    """Yield each conversation of the export, one at a time (the file is streamed)."""
    return stream_conversations(path, problems, parse_conversation, max_message_chars=max_message_chars)


def _when(value: Any) -> Any:
    return lenient_time(value, "created_at")


def parse_conversation(raw: Any, file: str, problems: list[Problem], *, index: int = 0,
                       max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
                       repaired: bool = False) -> SourceConversation | None:
    """One conversation as messages (None, with a problem recorded, if unusable)."""
    if not isinstance(raw, dict):
        problems.append(Problem(file, f"conversation #{index + 1} is {type(raw).__name__}, not an object"))
        return None
    cid = str(raw.get("uuid") or raw.get("id") or f"#{index + 1}")
    items = raw.get("chat_messages")
    if not isinstance(items, list):
        problems.append(Problem(file, "conversation has no 'chat_messages' list", conversation=cid))
        return None
    conv = SourceConversation(file=file, format=FORMAT, id=cid, title=raw.get("name"), messages=[])
    last_time = _when(raw.get("created_at"))
    for n, msg in enumerate(items):
        conv.n_read += 1
        if not isinstance(msg, dict):
            problems.append(Problem(file, f"message #{n + 1} is {type(msg).__name__}, not an object",
                                    conversation=cid, message=f"#{n + 1}"))
            continue
        mid = str(msg.get("uuid") or f"#{n + 1}")
        role = _SENDERS.get(str(msg.get("sender", "")).lower())
        if role is None:
            problems.append(Problem(file, f"unknown sender {msg.get('sender')!r}", conversation=cid, message=mid))
            continue
        when = _when(msg.get("created_at")) or last_time
        last_time = when
        blocks = msg.get("content")
        if isinstance(blocks, list) and blocks:
            texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str)]
            if not texts:
                kinds = sorted({str(b.get("type")) for b in blocks if isinstance(b, dict)})
                problems.append(Problem(file, f"no text ({', '.join(kinds)} content only)", conversation=cid,
                                        message=mid, severity="ignored"))
                continue
            text: Any = "\n".join(texts)
        else:
            text = msg.get("text")
        m, problem = clean_message(role, text, file=file, conversation=cid, message=mid, created_at=when,
                                   max_chars=max_message_chars)
        if problem:
            problems.append(problem)
        if m is not None:
            if repaired and "\ufffd" in m.content:
                problems.append(Problem(file, "invalid UTF-8 in the source replaced with U+FFFD", conversation=cid,
                                        message=mid, severity="warning"))
            conv.messages.append(m)
    return conv
