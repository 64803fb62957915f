"""Identifiers and content hashes.

>>> content_hash("Alice  is vegetarian.") == content_hash("alice is vegetarian")
True
"""
from __future__ import annotations

import functools
import hashlib
import re
import uuid


def new_id() -> str:
    """A new random UUID4 string (mem0 uses UUIDs too)."""
    return str(uuid.uuid4())


def normalise_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip(".!;, ")


def content_hash(text: str) -> str:
    """md5 of the normalised text: the per-scope de-duplication key."""
    return hashlib.md5(normalise_text(text).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=65_536)
def entity_id(norm: str) -> str:
    """The id of an entity: md5 of its normalised name (cached: every add names a few again)."""
    return hashlib.md5(("entity:" + norm).encode("utf-8")).hexdigest()
