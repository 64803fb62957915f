"""What one request may carry (issue 44): the checks behind `LimitsConfig` (config key `limits`,
`memstore serve --max-body`). Every door applies the same ones: the library's add() (so the
server, its fronts and the MCP tools, which all add through it), and the server's body limit
(memstore/server/limits.py) before a byte is parsed. An answer over a limit is RequestTooLargeError
(HTTP 413) naming the limit, its value and what was sent; nothing is stored.

>>> from memstore.core.config import LimitsConfig
>>> check_add_size(["hi"] * 3, {"k": "v"}, LimitsConfig(max_messages=2))
Traceback (most recent call last):
...
memstore.core.errors.RequestTooLargeError: 3 messages in one add; the limit is 2 (config key limits.max_messages) — split the conversation into several adds, or raise limits.max_messages
>>> parse_size("4MB"), parse_size("512KiB"), parse_size(1000)
(4194304, 524288, 1000)
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memstore.core.errors import ConfigError, RequestTooLargeError

if TYPE_CHECKING:
    from memstore.core.config import LimitsConfig

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(value: str | int) -> int:
    """Bytes of a size given as a number or "4MB" / "512KiB" (binary units either way)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(f"size {value!r} is not a size", hint="give bytes, or a size like 4MB, 512KiB, 1GB")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def too_large(what: str, got: int, allowed: int, key: str, hint: str) -> RequestTooLargeError:
    """The one error of every limit."""
    return RequestTooLargeError(f"{what}; the limit is {allowed:,} (config key limits.{key})",
                                hint=f"{hint}, or raise limits.{key}", limit=f"limits.{key}", allowed=allowed, got=got)


def check_add_size(texts: Sequence[str | None], metadata: Any, limits: LimitsConfig) -> None:
    """An add's messages (their texts) and metadata within `limits`; RequestTooLargeError if not."""
    if len(texts) > limits.max_messages:
        raise too_large(f"{len(texts):,} messages in one add", len(texts), limits.max_messages, "max_messages",
                        "split the conversation into several adds")
    for i, text in enumerate(texts):
        if text is not None and len(text) > limits.max_message_chars:
            raise too_large(f"message #{i} has {len(text):,} characters", len(text), limits.max_message_chars,
                            "max_message_chars", "send long documents in parts (or through ingest)")
    if metadata:
        size = len(json.dumps(metadata, default=str, ensure_ascii=False).encode("utf-8"))
        if size > limits.max_metadata_bytes:
            raise too_large(f"the metadata is {size:,} bytes as JSON", size, limits.max_metadata_bytes,
                            "max_metadata_bytes", "keep metadata to small keys and values")
