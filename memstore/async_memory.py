"""`AsyncMemory`: the same API as `Memory`, each call run on a worker thread. A thin wrapper over
the one synchronous core — there is no second pipeline.

>>> import asyncio, inspect
>>> inspect.iscoroutinefunction(AsyncMemory.add)
True
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any

from memstore.memory import Memory

ASYNC_METHODS = ("add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "reset")


class AsyncMemory:
    """`m = AsyncMemory("runs/a.duckdb"); await m.add(...)` — same arguments and returns as Memory."""

    def __init__(self, path: Any = None, *, config: Any = None, memory: Memory | None = None) -> None:
        self.sync = memory or Memory(path, config=config)

    @classmethod
    def from_config(cls, config: Any) -> AsyncMemory:
        return cls(config=config)

    def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        # Methods added to Memory by other features are exposed as coroutines too.
        attr = getattr(self.sync, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)
        return call


def _wrap(name: str) -> Any:
    method = getattr(Memory, name)

    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)
    return call


for _name in ASYNC_METHODS:
    setattr(AsyncMemory, _name, _wrap(_name))
