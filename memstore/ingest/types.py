"""What readers yield: conversations of provenance-carrying messages, and the problems they met.

A reader never raises for one bad message or conversation: it yields the good ones and records a
`Problem` (file, conversation, message, reason). A file that cannot be read any further (truncated
JSON, not JSON at all) raises `SourceFormatError` AFTER yielding everything before the damage.

>>> msg, problem = clean_message("user", "  I'm vegetarian  ", file="x.json", conversation="c1", message="m1")
>>> msg.content, msg.source_message_id, problem
("I'm vegetarian", 'm1', None)
>>> clean_message("user", "x" * 10, file="x.json", conversation="c1", message="m2", max_chars=5)[1].reason
'message is 10 characters, over the limit of 5 (raise max_message_chars to keep it)'
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from memstore.core.checks import MAX_MESSAGE_CHARS, message_too_long
from memstore.core.errors import (
    SourceFormatError,  # noqa: F401  (defined with every error class)
    UnknownFormatError,  # noqa: F401  (defined with every error class)
)
from memstore.core.model import Message

DEFAULT_MAX_MESSAGE_CHARS = MAX_MESSAGE_CHARS    # the one limit add() applies too (core/checks.py)
ROLES = {"user": "user", "human": "user", "me": "user", "customer": "user",
         "assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant", "gpt": "assistant",
         "chatgpt": "assistant", "claude": "assistant", "agent": "assistant",
         "system": "system", "tool": "tool", "function": "tool"}


@dataclass
class Problem:
    """Something a reader or the runner could not use, and why. `severity` is `skipped` (left out),
    `warning` (kept, but changed: e.g. invalid UTF-8 replaced), `failed` (extraction/commit failed)
    or `error` (the rest of the file could not be read)."""

    file: str
    reason: str
    conversation: str | None = None
    message: str | None = None
    severity: str = "skipped"
    unread: bool = False            # a message no conversation counted (e.g. a JSONL line that is not JSON)

    def to_dict(self) -> dict[str, str | None]:
        return {"file": self.file, "conversation": self.conversation, "message": self.message,
                "severity": self.severity, "reason": self.reason}


@dataclass
class SourceConversation:
    """One conversation from a source file; `messages` are in conversation order, each carrying
    source_file / source_conversation / source_message_id."""

    file: str
    format: str
    id: str
    title: str | None
    messages: list[Message]
    problems: list[Problem] = field(default_factory=list)
    n_read: int = 0                 # messages seen in the source, kept or not

    @property
    def started_at(self) -> dt.datetime | None:
        return next((m.created_at for m in self.messages if m.created_at is not None), None)


def clean_message(role: str | None, content: object, *, file: str, conversation: str, message: str | None,
                  created_at: dt.datetime | None = None, name: str | None = None,
                  max_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> tuple[Message | None, Problem | None]:
    """A provenance-carrying Message, or None and the reason it was left out. Lone surrogates and
    NUL characters (which DuckDB cannot store) are replaced and reported as a warning."""
    def problem(reason: str, severity: str = "skipped") -> Problem:
        return Problem(file=file, conversation=conversation, message=message, reason=reason, severity=severity)

    if not isinstance(content, str):
        return None, problem(f"message content is {type(content).__name__}, not text")
    text = content.strip()
    if not text:
        return None, problem("empty message")
    too_long = message_too_long(text, max_chars)
    if too_long:
        return None, problem(too_long)
    warn = None
    if "\x00" in text:
        text = text.replace("\x00", "")
        warn = problem("NUL characters removed", "warning")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
        warn = problem("invalid Unicode (lone surrogate escapes) replaced with '?'", "warning")
    key = (role or "user").strip().lower()
    if key not in ROLES and not name:
        name = role.strip()           # a speaker's name in the role column: a person talking
    msg = Message(role=ROLES.get(key, "user"), content=text, name=name, created_at=created_at,
                  source_file=file, source_conversation=conversation, source_message_id=message)
    return msg, warn
