"""Argument checks at the API edge: ids, texts and the optional scope of id-based calls.

A bad argument must fail here, with a typed error naming the argument, before it reaches SQL: a
DuckDB conversion error on `get(123)` quoted another stored memory's id.

>>> check_id("0b1f-42")
'0b1f-42'
>>> check_id(123)
Traceback (most recent call last):
...
memstore.core.errors.InvalidIdError: memory_id must be a string id, got int — ids are the strings add() returned
>>> check_text("caf\\udce9", "text")
Traceback (most recent call last):
...
memstore.core.errors.InvalidInputError: text holds a lone surrogate at position 3 (not valid Unicode) — decode the source with errors='replace' or fix the text
>>> scope_matches({"user_id": "ann", "agent_id": None}, user_id="ann"), scope_matches({"user_id": "ann"}, user_id="bob")
(True, False)
"""
from __future__ import annotations

import numbers
from typing import Any

from memstore.core.errors import InvalidIdError, InvalidInputError

MAX_ID = 200
# The one limit on a message's length, for add() and ingest alike (config key `max_message_chars`):
# ~50k tokens, a pasted document rather than a chat turn beyond it.
MAX_MESSAGE_CHARS = 200_000


def message_too_long(text: str, limit: int) -> str | None:
    """Why a message is refused (over `limit` characters), or None: the one rule add() and ingest
    apply (add() raises it, ingest reports the message as skipped and goes on).

    >>> message_too_long("x" * 10, 5)
    'message is 10 characters, over the limit of 5 (raise max_message_chars to keep it)'
    >>> message_too_long("short", 5) is None
    True
    """
    if len(text) <= limit:
        return None
    return f"message is {len(text):,} characters, over the limit of {limit:,} (raise max_message_chars to keep it)"
_ID_HINT = "ids are the strings add() returned"


def check_id(value: Any, arg: str = "memory_id") -> str:
    """`value` if it can be a memory id (a non-empty printable string of at most 200 characters)."""
    if not isinstance(value, str):
        raise InvalidIdError(f"{arg} must be a string id, got {type(value).__name__}", hint=_ID_HINT, argument=arg)
    if not value.strip() or len(value) > MAX_ID or not value.isprintable():
        raise InvalidIdError(f"{arg} is not a memory id (empty, over {MAX_ID} characters or with control characters)",
                             hint=_ID_HINT, argument=arg)
    return value


def check_text(value: Any, arg: str, *, allow_empty: bool = False) -> str:
    """`value` if it is storable text: a string, not blank (unless allowed), valid Unicode."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{arg} must be a string, got {type(value).__name__}", argument=arg)
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{arg} is empty", hint=f"pass the new text as {arg}=...", argument=arg)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{arg} holds a lone surrogate at position {exc.start} (not valid Unicode)",
                                hint="decode the source with errors='replace' or fix the text", argument=arg,
                                position=exc.start) from None
    return value


def check_scope_args(user_id: Any = None, agent_id: Any = None, run_id: Any = None) -> dict[str, str]:
    """The identity keys given to an id-based call (get / update / delete / history), as a dict."""
    from memstore.core.scope_rule import canonical_scope

    return canonical_scope({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})


def scope_matches(row: dict[str, Any], **scope: Any) -> bool:
    """Does a memory (or history row) belong to every identity key given (None keys ignored)?"""
    return all(row.get(k) == v for k, v in scope.items() if v is not None)


MAX_LIMIT = 100_000


def check_query(query: Any) -> None:
    """A search query must be non-empty text.

    >>> check_query("  ")
    Traceback (most recent call last):
    ...
    memstore.core.errors.InvalidInputError: search query is empty — pass the text to search for
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("search query is empty", hint="pass the text to search for")


def check_limit(value: Any, name: str = "top_k") -> int:
    """A result count: an int from 1 to MAX_LIMIT.

    >>> check_limit(5)
    5
    >>> check_limit(0)
    Traceback (most recent call last):
    ...
    memstore.core.errors.InvalidInputError: top_k must be an integer from 1 to 100000, got 0 — ask for at least one result
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= MAX_LIMIT:
        raise InvalidInputError(f"{name} must be an integer from 1 to {MAX_LIMIT}, got {value!r}",
                            hint="ask for at least one result")
    return int(value)
