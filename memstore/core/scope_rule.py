"""The one scope rule: what an identity value (user_id / agent_id / run_id) may be, its one canonical
form, whether a call's scope lies inside a bound scope (a token's, an MCP session's), and the
placement key a cluster routes by. Every door calls this module: the library (`Scope.from_kwargs`,
filters, id-scoped reads), the server's token confinement, the MCP tools, the shard guard, the
cluster client and the rebalance tool, so one value means one scope everywhere.

The canonical form of a value: surrounding whitespace removed (spaces, tabs, newlines, any Unicode
space), then Unicode normalisation NFC (so "José" typed as e + combining accent is the same user as
the precomposed "José"). Case is kept and no confusable is folded: "Ana" and "ana", or a Cyrillic
"а" and a Latin "a", are different scopes. A value that cannot be made canonical is refused with
`IdentityError` (HTTP 400) at every door, before anything runs: not a string, blank, longer than
`MAX_ID_CHARS` characters as given, or holding a control or format character (C0/C1 controls, DEL, zero-width
and bidi marks, line/paragraph separators) inside it. A shard reached with a value the balancer
placed by its raw bytes places it again by its canonical form and answers 421 `WrongShardError`
naming the right shard when that is another one (HAProxy can trim but not normalise).

>>> canonical_id("  pad0\\t"), canonical_id("Jose\\u0301") == "Jos\\u00e9", canonical_id(None)
('pad0', True, None)
>>> canonical_id("a\\u200bb")
Traceback (most recent call last):
...
memstore.core.errors.IdentityError: user_id holds a control or format character (U+200B at position 1) — ids are plain text: remove it
>>> placement_key({"user_id": " pad0", "agent_id": "bot"}), placement_key({"agent_id": "bot"})
('pad0', 'bot')
>>> confine_scope({"user_id": " alice", "agent_id": "x"}, {"user_id": "alice"}, refuse=ValueError)
{'user_id': 'alice', 'agent_id': 'x'}
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Final

from memstore.core.errors import IdentityError

IDENTITY_KEYS = ("user_id", "agent_id", "run_id")       # also the placement order
MAX_ID_CHARS = 200                                      # as given, padding included (the OpenAPI maxLength)
NORMAL_FORM: Final = "NFC"
# Characters refused inside an id (the ends may hold whitespace: it is trimmed): controls (C0, DEL, C1),
# format characters (soft hyphen, zero-width and bidi marks, BOM, tags...), the line and paragraph
# separators, surrogates and private use. Listed as ranges (Unicode 15's Cc, Cf, Cs, Co, Zl, Zp), not
# looked up by category, so every Python and the server's OpenAPI pattern (`IDENTITY_PATTERN`) agree.
REFUSED_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
                  (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F),
                  (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xE000, 0xF8FF),
                  (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
                  (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
                  (0xE0020, 0xE007F), (0xF0000, 0x10FFFF))


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    def one(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    return "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges)


REFUSED_CLASS = _class(tuple(r for r in REFUSED_RANGES if r != (0xD800, 0xDFFF)))  # in [...]; Python's and Rust's
# regex syntax (pydantic's default engine): a pattern cannot name lone surrogates, which JSON cannot carry
# either (the server reads them as U+FFFD); the rule itself refuses them.
# A whole value the rule accepts, as a Python regex (the server's pattern): optional surrounding
# whitespace, then something that is neither whitespace at its ends nor refused anywhere.
IDENTITY_PATTERN = rf"^\s*[^{REFUSED_CLASS}\s](?:[^{REFUSED_CLASS}]*[^{REFUSED_CLASS}\s])?\s*$"
_REFUSED_RE = re.compile(f"[{REFUSED_CLASS}\\ud800-\\udfff]")
# What HAProxy may trim before it places a key (`ltrim`/`rtrim` in 2.8+; the shard re-places anyway).
TRIMMABLE = " \t\n\r\x0b\x0c"


def _bad_char(value: str) -> tuple[int, str] | None:
    found = _REFUSED_RE.search(value)
    return None if found is None else (found.start(), found.group())


def canonical_id(value: object, key: str = "user_id") -> str | None:
    """The canonical form of one identity value (None stays None); IdentityError when it has none."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise IdentityError(f"{key} must be a string, got {type(value).__name__}", key=key,
                            hint=f'e.g. {key}="alice" (str(...) it if your ids are numbers)')
    if len(value) > MAX_ID_CHARS:         # as given: what the server's OpenAPI document says (maxLength)
        raise IdentityError(f"{key} is {len(value)} characters long: at most {MAX_ID_CHARS}", key=key,
                            hint="use a shorter id (e.g. a hash of the long one)")
    text = value.strip()
    if not text.isascii():
        text = unicodedata.normalize(NORMAL_FORM, text).strip()
    if not text:
        raise IdentityError(f"{key} is empty", hint=f"pass a non-empty {key} or leave it out", key=key)
    bad = _bad_char(text)
    if bad is not None:
        raise IdentityError(f"{key} holds a control or format character (U+{ord(bad[1]):04X} at position {bad[0]})",
                            hint="ids are plain text: remove it", key=key)
    return text


def is_canonical(value: object) -> bool:
    """Is `value` a valid identity value already in its canonical form?

    >>> is_canonical("pad0"), is_canonical(" pad0"), is_canonical("a\\x01")
    (True, False, False)
    """
    try:
        return canonical_id(value) == value
    except IdentityError:
        return False


def canonical_scope(scope: Mapping[str, Any], *, blank_is_absent: bool = False) -> dict[str, str]:
    """The identity keys of `scope` (user_id / agent_id / run_id, None left out) in canonical form;
    other keys are ignored. `blank_is_absent`: an empty string counts as not given (HTTP doors).

    >>> canonical_scope({"user_id": " ana ", "agent_id": None, "top_k": 3})
    {'user_id': 'ana'}
    """
    out: dict[str, str] = {}
    for key in IDENTITY_KEYS:
        value = scope.get(key)
        if value is None or (blank_is_absent and value == ""):
            continue
        out[key] = canonical_id(value, key)  # type: ignore[assignment]
    return out


def same_id(a: object, b: object) -> bool:
    """Do two identity values name the same scope (both canonicalised; an invalid one matches nothing)?

    >>> same_id(" Jose\\u0301", "Jos\\u00e9"), same_id("Ana", "ana")
    (True, False)
    """
    try:
        return a is not None and b is not None and canonical_id(a) == canonical_id(b)
    except IdentityError:
        return False


def placement_key(scope: Mapping[str, Any]) -> str | None:
    """The key a cluster places `scope` by: its canonical user_id, else agent_id, else run_id (None
    when it names none; an empty string counts as none). IdentityError when the key is not valid."""
    for key in IDENTITY_KEYS:
        value = scope.get(key)
        if value is not None and value != "":
            return canonical_id(value if isinstance(value, str) else str(value), key)
    return None


def filter_identity(filters: Any) -> dict[str, Any]:
    """The identity values named at the top level of a filter tree (plain or `{"eq": v}`)."""
    out: dict[str, Any] = {}
    if isinstance(filters, dict):
        for key in IDENTITY_KEYS:
            value = filters.get(key)
            if isinstance(value, dict) and set(value) == {"eq"}:
                value = value["eq"]
            if isinstance(value, str) and value != "":
                out[key] = value
    return out


def canonical_filters(filters: Any) -> Any:
    """`filters` with its identity values in canonical form (so " alice " reads what add() wrote for
    "alice"): the top-level ones (plain or `eq`; an invalid one raises IdentityError) and, where they
    can be made canonical, those inside AND / OR / NOT and the text operands of any operator.

    >>> canonical_filters({"user_id": " alice ", "agent_id": {"eq": "bot "}, "topic": " x "})
    {'user_id': 'alice', 'agent_id': {'eq': 'bot'}, 'topic': ' x '}
    >>> canonical_filters({"OR": [{"user_id": {"in": ["Jose\u0301", 3]}}]}) == {"OR": [{"user_id": {"in": ["Jos\u00e9", 3]}}]}
    True
    """
    if not isinstance(filters, dict):
        return filters
    out = _canonical_tree(filters)
    for key in IDENTITY_KEYS:
        value = filters.get(key)
        if isinstance(value, str):
            out[key] = canonical_id(value, key)
        elif isinstance(value, dict) and set(value) == {"eq"} and isinstance(value["eq"], str):
            out[key] = {"eq": canonical_id(value["eq"], key)}
    return out


def _soft(value: Any) -> Any:
    """A text operand in canonical form when it has one; anything else unchanged (the filter
    compiler says what is wrong with it)."""
    if isinstance(value, str):
        try:
            return canonical_id(value)
        except IdentityError:
            return value
    if isinstance(value, list):
        return [_soft(v) for v in value]
    return value


_MAX_DEPTH = 40     # deeper trees are left as they are: the filter compiler refuses them (FilterError)


def _canonical_tree(filters: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        return filters
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key in ("AND", "OR") and isinstance(value, list):
            out[key] = [_canonical_tree(v, depth + 1) if isinstance(v, dict) else v for v in value]
        elif key == "NOT" and isinstance(value, dict):
            out[key] = _canonical_tree(value, depth + 1)
        elif key in IDENTITY_KEYS:
            out[key] = {op: _soft(v) for op, v in value.items()} if isinstance(value, dict) else _soft(value)
        else:
            out[key] = value
    return out


def _plain(value: Any) -> Any:
    return value["eq"] if isinstance(value, dict) and set(value) == {"eq"} else value


def filter_within(filters: Any, bound: Mapping[str, str], refuse: Callable[[str, Any], BaseException]) -> None:
    """Raise `refuse(key, value)` when a filter tree names, anywhere (AND / OR / NOT, `in`, `ne` ...),
    an identity other than the bound one's; `bound` is canonical."""
    if isinstance(filters, dict):
        for key, value in filters.items():
            if key in ("AND", "OR") and isinstance(value, list):
                for sub in value:
                    filter_within(sub, bound, refuse)
            elif key == "NOT":
                filter_within(value, bound, refuse)
            elif key in bound:
                plain = _plain(value)
                if not (isinstance(plain, str) and canonical_id(plain, key) == bound[key]):
                    raise refuse(key, value)


def confine_scope(given: Mapping[str, Any], bound: Mapping[str, str],
                  refuse: Callable[[str, Any], BaseException]) -> dict[str, str]:
    """The scope a call runs in when it is bound to `bound` (a token's or an MCP session's scope):
    `bound`, narrowed by the call's other identity keys; a key that names another value than the bound
    one raises `refuse(key, value)` (each door says it its way). Values are compared canonically and
    returned canonical; an absent or empty value is filled in from `bound`."""
    bound_c = canonical_scope(bound)
    out = dict(bound_c)
    for key in IDENTITY_KEYS:
        value = given.get(key)
        if value is None or value == "":
            continue
        value = canonical_id(value, key)
        if key in bound_c and value != bound_c[key]:
            raise refuse(key, given[key])
        out[key] = value  # type: ignore[assignment]
    return out
