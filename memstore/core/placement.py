"""Which shard owns a scope: one pure function, used by the client, the balancer's config and each shard.

The placement key of a scope is its `user_id` when it has one, else its `agent_id`, else its `run_id`
(so every memory of a user, whatever agent or run wrote it, lives on one shard). The key's UTF-8 bytes
are hashed with CRC-32 (the one zlib, PNG and HAProxy's `crc32` converter compute) into one of
`SLOTS` (1024) slots; the slot's shard is Lamping & Veach's jump consistent hash of the slot number
over the number of shards. Going from N to M shards moves only the slots whose jump hash changes
(about |M-N|/max(M, N) of them), and HAProxy can compute the slot itself (`crc32,and(1023)`) and look
the shard up in a table the config lists: no Lua, one file.

>>> scope_key({"user_id": "alice", "agent_id": "bot"}), scope_key({"agent_id": "bot"})
('alice', 'bot')
>>> slot_of("alice") == __import__("zlib").crc32(b"alice") % SLOTS
True
>>> [jump_hash(k, 3) for k in range(6)]
[0, 0, 0, 2, 1, 1]
>>> shard_of({"user_id": "alice"}, 1)
0
"""
from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from memstore.core.scope_rule import IDENTITY_KEYS, placement_key

SLOTS = 1024                     # slots of the key space; a cluster has at most SLOTS shards
SCOPE_KEYS = IDENTITY_KEYS                          # in placement order
PLACEMENT = "crc32-1024-jump/1"  # names this scheme in /cluster answers and configs
# Calls that create a scope's rows: placed by their scope key even when it is not a user.
CREATING = frozenset({"add", "ingest", "ingest_upload", "ingest_prepared", "ingest_known"})


def scope_key(scope: Mapping[str, Any]) -> str | None:
    """The placement key: the canonical user_id, else agent_id, else run_id (None when the scope
    names none; IdentityError when it is not a valid id): core/scope_rule.py's `placement_key`."""
    return placement_key(scope)


def slot_of(key: str) -> int:
    """The key's slot: CRC-32 of its UTF-8 bytes, modulo SLOTS (HAProxy: `crc32,and(1023)`). `key`
    is a canonical id (`placement_key`): the bytes of " alice" are another slot than alice's."""
    return zlib.crc32(key.encode("utf-8")) & (SLOTS - 1)


def jump_hash(key: int, buckets: int) -> int:
    """Jump consistent hash (Lamping & Veach 2014) of a 64-bit `key` over `buckets` buckets."""
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    b, j = -1, 0
    key &= 0xFFFFFFFFFFFFFFFF
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def shard_of_slot(slot: int, shards: int) -> int:
    """The shard (0-based) that owns `slot` in a cluster of `shards` shards."""
    return jump_hash(slot, shards)


def shard_of_key(key: str, shards: int) -> int:
    """The shard that owns placement key `key`."""
    return shard_of_slot(slot_of(key), shards)


def shard_of(scope: Mapping[str, Any], shards: int) -> int | None:
    """The shard that owns `scope` (a dict with user_id / agent_id / run_id); None without a key."""
    key = scope_key(scope)
    return None if key is None else shard_of_key(key, shards)


def slot_table(shards: int) -> list[list[int]]:
    """For each shard, the slots it owns (what the HAProxy config lists)."""
    table: list[list[int]] = [[] for _ in range(shards)]
    for slot in range(SLOTS):
        table[shard_of_slot(slot, shards)].append(slot)
    return table


def parse_shard(text: str) -> tuple[int, int]:
    """`"1/3"` -> (1, 3): this server's shard index and the cluster's shard count.

    >>> parse_shard("2/3")
    (2, 3)
    """
    from memstore.core.errors import ConfigError

    head, sep, tail = str(text).partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index, count = -1, 0
    if not sep or count < 1 or count > SLOTS or not 0 <= index < count:
        raise ConfigError(f"--shard {text!r} is not INDEX/COUNT with 0 <= INDEX < COUNT <= {SLOTS}",
                          hint="e.g. --shard 0/3 for the first of three shards", key="shard")
    return index, count
