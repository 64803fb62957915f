"""The HTTP client of `memstore serve`: the same methods and return shapes as the embedded Memory.

>>> from memstore.client import connect, MemoryClient   # connect("http://127.0.0.1:8765", token=...)
"""
from __future__ import annotations

from typing import Any

__all__ = ["MemoryClient", "connect", "client_for"]


def __getattr__(name: str) -> Any:      # keep `import memstore.client` light (the CLI imports it)
    if name == "MemoryClient":
        from memstore.api.http_client import MemoryClient

        return MemoryClient
    if name in ("connect", "client_for"):
        from memstore.api import connect as mod

        return getattr(mod, name)
    raise AttributeError(name)
