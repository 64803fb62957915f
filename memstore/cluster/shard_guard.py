"""What a shard (`memstore serve --shard i/N`) refuses: a scope another shard owns.

The server hands its routes a `ShardGuard` around the Memory (and the group committer) instead of
the Memory itself; every call that names a `user_id` must be for a user this shard owns, and every
add or ingest must be for a scope this shard owns (its `agent_id` / `run_id` when it has no user).
Calls without a user_id that only read or delete (an agent-only filter, a memory by id) pass: the
cluster client fans them out to every shard and merges. Refused calls raise `WrongShardError`
naming the right shard before anything runs, so nothing is stored.

The owner is computed from the scope's canonical form (core/scope_rule.py), not the bytes the
balancer hashed: `" alice"` sent raw through HAProxy is alice, and a shard that is not alice's
answers 421 naming alice's shard instead of storing her memories where `forget` would not look.
A value that has no canonical form (a control character inside, blank, too long) is an
IdentityError here as at every other door.

>>> class Echo:
...     def add(self, messages, **kw): return "stored"
>>> g = ShardGuard(Echo(), shard=shard_of_key("alice", 2), shards=2)
>>> g.add("hi", user_id="alice")
'stored'
>>> try:
...     ShardGuard(Echo(), shard=1 - shard_of_key("alice", 2), shards=2).add("hi", user_id="alice")
... except WrongShardError as exc:
...     exc.fields["shard"] == shard_of_key("alice", 2)
True
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from memstore.core.errors import WrongShardError
from memstore.core.placement import CREATING, SCOPE_KEYS, shard_of_key
from memstore.core.scope_rule import canonical_id, placement_key


def check_owner(method: str, kwargs: Mapping[str, Any], shard: int, shards: int) -> None:
    """Raise WrongShardError when `method(**kwargs)` names a scope shard `shard` of `shards` does not own."""
    if kwargs.get("user_id") not in (None, ""):
        key = canonical_id(kwargs["user_id"], "user_id")
    elif method in CREATING:
        key = placement_key(kwargs)
        if key is None:
            return
    else:
        return
    owner = shard_of_key(key, shards)
    if owner != shard:
        raise WrongShardError(
            f"shard {shard}/{shards} does not own scope {key!r}: shard {owner} does; nothing was done",
            hint="send the request through the cluster's balancer (memstore cluster haproxy) or to shard "
                 f"{owner}; during a rebalance, retry once the balancer has the new layout",
            key=key, shard=owner, shards=shards, this_shard=shard)


class ShardGuard:
    """`target` (a Memory or a GroupCommitter) whose methods first check the scope's owner."""

    def __init__(self, target: Any, *, shard: int, shards: int) -> None:
        self._target, self.shard, self.shards = target, shard, shards

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value

        @functools.wraps(value)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            check_owner(name, _scope_kwargs(kwargs), self.shard, self.shards)
            return value(*args, **kwargs)

        return guarded


def _scope_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of a call: its user_id/agent_id/run_id kwargs, or those inside filters=."""
    found = {k: kwargs.get(k) for k in SCOPE_KEYS if kwargs.get(k) not in (None, "")}
    filters = kwargs.get("filters")
    if isinstance(filters, dict):
        for k in SCOPE_KEYS:
            if k not in found and isinstance(filters.get(k), (str, int)):
                found[k] = filters[k]
    return found
