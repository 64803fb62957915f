"""memstore: long-term memory for AI agents in one DuckDB file.

>>> from memstore import Memory, AsyncMemory, MemoryConfig, connect
"""
from __future__ import annotations

from typing import Any

from memstore.core import errors as _errors

# Every error class of memstore.core.errors is exported from here (and imported in milliseconds).
_ERRORS = sorted(n for n, v in vars(_errors).items()
                 if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == "memstore.core.errors")
globals().update({n: getattr(_errors, n) for n in _ERRORS})

__all__ = ["Memory", "AsyncMemory", "MemoryConfig", "MemoryAPI", "MemoryClient", "connect", "ingest_dataset",
           *_ERRORS]
__version__ = "0.1.0"

# Imported on first use, so `memstore --help` and a CLI talking to a server stay fast.
_LAZY = {"Memory": "memstore.memory", "AsyncMemory": "memstore.async_memory", "MemoryConfig": "memstore.core.config",
         "MemoryAPI": "memstore.api.protocol", "MemoryClient": "memstore.api.http_client",
         "connect": "memstore.api.connect",
         "ingest_dataset": "memstore.on_ray.ingest"}     # needs memstore[ray]; Ray loads when it runs


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
