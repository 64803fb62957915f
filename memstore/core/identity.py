"""Identity: which scope (user / agent / run) a memory belongs to.

>>> Scope(user_id="alice").key
'u=alice|a=|r='
>>> Scope.from_kwargs(user_id="alice", agent_id=None, run_id=None).as_dict()
{'user_id': 'alice'}
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from memstore.core.errors import IdentityError
from memstore.core.scope_rule import IDENTITY_KEYS, canonical_id

RESERVED_METADATA_KEYS = frozenset(IDENTITY_KEYS + ("actor_id", "id", "memory", "hash", "scope_key"))


@dataclass(frozen=True)
class Scope:
    """The (user_id, agent_id, run_id) triple a memory is stored under."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @classmethod
    def from_kwargs(cls, user_id: object = None, agent_id: object = None, run_id: object = None) -> Scope:
        scope = cls(canonical_id(user_id, "user_id"), canonical_id(agent_id, "agent_id"),
                    canonical_id(run_id, "run_id"))     # the one scope rule (core/scope_rule.py)
        if scope.user_id is None and scope.agent_id is None and scope.run_id is None:
            raise IdentityError("no identity given",
                                hint="pass at least one of user_id=, agent_id=, run_id=")
        return scope

    @property
    def key(self) -> str:
        # '|' and '=' are escaped so two different triples never share a key.
        def esc(v: str | None) -> str:
            return "" if v is None else v.replace("\\", "\\\\").replace("|", "\\|").replace("=", "\\=")
        return f"u={esc(self.user_id)}|a={esc(self.agent_id)}|r={esc(self.run_id)}"

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("user_id", self.user_id), ("agent_id", self.agent_id),
                                  ("run_id", self.run_id)) if v is not None}


@functools.lru_cache(maxsize=65536)
def key_parts(key: str) -> tuple[str | None, str | None, str | None]:
    """(user_id, agent_id, run_id) of a scope key (`Scope.key`'s inverse; None where empty).

    >>> key_parts(Scope(user_id="a|b", run_id="r=1").key)
    ('a|b', None, 'r=1')
    """
    parts: list[str] = []
    cur: list[str] = []
    chars = iter(key)
    for ch in chars:
        if ch == "\\":
            cur.append(next(chars, ""))
        elif ch == "|":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    values = [p.split("=", 1)[1] if "=" in p else p for p in parts]     # "u=...": the first '=' (escaped ones are gone)
    if len(values) != 3:
        raise ValueError(f"not a scope key: {key!r}")
    return tuple(v or None for v in values)  # type: ignore[return-value]


def scope_matches(scope_key: str, identity: tuple[tuple[str, str], ...]) -> bool:
    """Can a memory stored under `scope_key` match a filter requiring `identity` ((key, value)
    pairs of IDENTITY_KEYS, values canonical: the library's filters are, core/scope_rule.py)?

    >>> scope_matches("u=ana|a=|r=", (("user_id", "ana"),)), scope_matches("u=bo|a=|r=", (("user_id", "ana"),))
    (True, False)
    """
    parts = key_parts(scope_key)
    return all(parts[IDENTITY_KEYS.index(k)] == v for k, v in identity)


def check_metadata(metadata: object) -> dict[str, Any]:
    """Reject identity keys smuggled in metadata (mem0 silently merges them).

    >>> check_metadata({"topic": "food"})
    {'topic': 'food'}
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise IdentityError(f"metadata must be a dict, got {type(metadata).__name__}",
                            hint='e.g. metadata={"category": "food"}')
    bad = sorted(k for k in metadata if k in RESERVED_METADATA_KEYS)
    if bad:
        raise IdentityError(f"metadata may not set reserved key(s) {bad}",
                            hint="pass identity as user_id=/agent_id=/run_id= arguments, not inside metadata",
                            keys=bad)
    return dict(metadata)
