"""ChatGPT data export (`conversations.json`, extracted or inside the export .zip).

Each conversation is a message tree (`mapping`: node → parent/children). Editing a message or
regenerating an answer leaves sibling branches; the conversation the user last saw is the path from
`current_node` back to the root, so that is what is read. Messages off that branch, hidden system
messages, tool calls and their outputs are counted as ignored (with the reason), not stored.

>>> conv = {"id": "c1", "title": "t", "create_time": 1704700000.0, "current_node": "b", "mapping": {
...   "r": {"message": None, "parent": None, "children": ["a", "x"]},
...   "x": {"message": {"id": "mx", "author": {"role": "user"}, "create_time": 1704700001.0,
...                     "content": {"content_type": "text", "parts": ["I live in Cambridge"]}}, "parent": "r"},
...   "a": {"message": {"id": "ma", "author": {"role": "user"}, "create_time": 1704700002.0,
...                     "content": {"content_type": "text", "parts": ["I live in Boston"]}}, "parent": "r"},
...   "b": {"message": {"id": "mb", "author": {"role": "assistant"}, "create_time": 1704700003.0,
...                     "content": {"content_type": "text", "parts": ["Noted."]}}, "parent": "a"}}}
>>> problems = []
>>> c = parse_conversation(conv, "conversations.json", problems)
>>> [(m.role, m.content, m.source_message_id) for m in c.messages]
[('user', 'I live in Boston', 'ma'), ('assistant', 'Noted.', 'mb')]
>>> [(p.message, p.reason) for p in problems]
[('mx', 'not on the current branch (edited or regenerated)')]
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

FORMAT = "chatgpt"
_TEXT_TYPES = ("text", "multimodal_text")


def read_chatgpt(path: str | os.PathLike, problems: list[Problem], *,
                 max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS, **_: Any) -> Iterator[SourceConversation]:
    """Yield each conversation of the export, one at a time (the file is streamed)."""
    return stream_conversations(path, problems, parse_conversation, max_message_chars=max_message_chars)


def _when(value: Any) -> Any:
    return lenient_time(value, "create_time")


def parse_conversation(raw: Any, file: str, problems: list[Problem], *, index: int = 0,
                       max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
                       repaired: bool = False) -> SourceConversation | None:
    """One conversation's current branch as messages (None, with a problem recorded, if unusable)."""
    if not isinstance(raw, dict):
        problems.append(Problem(file, f"conversation #{index + 1} is {type(raw).__name__}, not an object"))
        return None
    cid = str(raw.get("conversation_id") or raw.get("id") or f"#{index + 1}")
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict):
        hint = ": this looks like a Claude export, use --format claude" if "chat_messages" in raw else ""
        problems.append(Problem(file, f"conversation has no message tree ('mapping'){hint}", conversation=cid))
        return None
    conv = SourceConversation(file=file, format=FORMAT, id=cid, title=raw.get("title"), messages=[])
    path, why = _current_branch(mapping, raw.get("current_node"))
    if why:
        problems.append(Problem(file, why, conversation=cid, severity="warning"))
    on_branch = {id(n) for n in path}
    for node in mapping.values():
        msg = node.get("message") if isinstance(node, dict) else None
        if isinstance(msg, dict) and id(node) not in on_branch:
            conv.n_read += 1
            problems.append(Problem(file, "not on the current branch (edited or regenerated)", conversation=cid,
                                    message=str(msg.get("id")), severity="ignored"))
    last_time = _when(raw.get("create_time"))
    for node in path:
        msg = node.get("message")
        if not isinstance(msg, dict):
            continue
        conv.n_read += 1
        mid = str(msg.get("id") or node.get("id"))
        when = _when(msg.get("create_time")) or last_time
        last_time = when
        role, text, ignore = _text_of(msg)
        if ignore:
            problems.append(Problem(file, ignore, conversation=cid, message=mid, severity="ignored"))
            continue
        name = (msg.get("author") or {}).get("name") if role == "user" else None
        m, problem = clean_message(role, text, file=file, conversation=cid, message=mid, created_at=when,
                                   name=name if isinstance(name, str) and name else None,
                                   max_chars=max_message_chars)
        if problem:
            problems.append(problem)
        if m is not None:
            if repaired and "\ufffd" in m.content:
                problems.append(Problem(file, "invalid UTF-8 in the source replaced with U+FFFD", conversation=cid,
                                        message=mid, severity="warning"))
            conv.messages.append(m)
    return conv


def _current_branch(mapping: dict, current: Any) -> tuple[list[dict], str | None]:
    """Nodes from the root to `current_node`; falls back to the newest leaf when it is missing."""
    why = None
    if current not in mapping:
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        if not leaves:
            return [], "message tree has no leaf"
        current = max(leaves, key=lambda k: (_msg_time(mapping[k]), k))
        why = "current_node missing: read the branch ending at the newest message"
    path, seen = [], set()
    node_id = current
    while node_id is not None:
        if node_id in seen:
            return path[::-1], "message tree has a cycle: read the branch up to it"
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            why = f"message tree names a missing parent {node_id!r}: read the branch below it"
            break
        path.append(node)
        node_id = node.get("parent")
    return path[::-1], why


def _msg_time(node: dict) -> float:
    msg = node.get("message") or {}
    t = msg.get("create_time") if isinstance(msg, dict) else None
    return float(t) if isinstance(t, (int, float)) else 0.0


def _text_of(msg: dict) -> tuple[str, Any, str | None]:
    """(role, text, reason to ignore or None)."""
    author = msg.get("author") if isinstance(msg.get("author"), dict) else {}
    role = str(author.get("role") or "user")
    meta = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
    if meta.get("is_visually_hidden_from_conversation"):
        return role, None, "hidden message (not shown in the chat)"
    if role in ("system", "tool"):
        return role, None, f"{role} message"
    if role == "assistant" and msg.get("recipient") not in (None, "all"):
        return role, None, "assistant tool call"
    content = msg.get("content") if isinstance(msg.get("content"), dict) else {}
    ctype = content.get("content_type", "text")
    if ctype not in _TEXT_TYPES:
        return role, None, f"{ctype} content (not chat text)"
    parts = content.get("parts")
    if not isinstance(parts, list):
        return role, None, "text content without parts"
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    if not texts and any(not isinstance(p, str) for p in parts):
        return role, None, "no text (image or file only)"
    return role, "\n".join(texts), None   # "" is recorded as an empty message by clean_message
