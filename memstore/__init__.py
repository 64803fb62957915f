"""memstore: long-term memory for AI agents in one DuckDB file.

>>> from memstore import Memory, AsyncMemory, MemoryConfig, connect
"""
from __future__ import annotations

from typing import Any

from memstore.errors import (AuthError, ConfigError, FilterError, IdentityError, LLMError, LLMUnavailableError,
                             MemstoreError, NotFoundError, ServerError, ServerUnavailableError, StoreLockedError,
                             StoreNotFoundError, StoreWriteError)

__all__ = ["Memory", "AsyncMemory", "MemoryConfig", "MemoryAPI", "MemoryClient", "connect", "MemstoreError",
           "ConfigError", "IdentityError", "FilterError", "NotFoundError", "LLMError", "LLMUnavailableError",
           "StoreWriteError", "StoreLockedError", "StoreNotFoundError", "ServerError", "ServerUnavailableError",
           "AuthError"]
__version__ = "0.1.0"

# Imported on first use, so `memstore --help` and a CLI talking to a server stay fast.
_LAZY = {"Memory": "memstore.memory", "AsyncMemory": "memstore.async_memory", "MemoryConfig": "memstore.config",
         "MemoryAPI": "memstore.api.protocol", "MemoryClient": "memstore.client.http_memory",
         "connect": "memstore.client.connect"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memstore' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
