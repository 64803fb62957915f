"""Which store files this process has open (`Database.others_open`), and why one did not open.

`opened`/`closed` count the Database objects of this process on each file;
`explain_connect_error` turns DuckDB's lock errors into one sentence that says who holds the file
and what to do.

>>> opened("/tmp/x.duckdb"); open_count("/tmp/x.duckdb")
1
>>> closed("/tmp/x.duckdb"); open_count("/tmp/x.duckdb")
0
"""
from __future__ import annotations

import os
import threading

import duckdb

from memstore.core.errors import StoreLockedError

_OPEN: dict[str, int] = {}
_OPEN_LOCK = threading.Lock()


def opened(path: str) -> None:
    if path != ":memory:":
        with _OPEN_LOCK:
            key = os.path.realpath(path)
            _OPEN[key] = _OPEN.get(key, 0) + 1


def closed(path: str) -> None:
    if path != ":memory:":
        with _OPEN_LOCK:
            key = os.path.realpath(path)
            _OPEN[key] = _OPEN.get(key, 1) - 1
            if _OPEN[key] <= 0:
                del _OPEN[key]


def explain_connect_error(path: str, read_only: bool, exc: BaseException) -> BaseException | None:
    """What to raise instead of DuckDB's error when a store file does not open: a lock held by
    another process (a memstore server still starting, or something else) or a known cause
    (memstore/store/open_errors.py) as one clear sentence; None: raise DuckDB's own."""
    from memstore.store.open_errors import explain_open_error

    if isinstance(exc, duckdb.IOException):
        from memstore.store.lockfile import lock_holder, starting_server

        holder = lock_holder(exc)
        if holder is not None:
            starting = starting_server(path)
            if starting is not None:
                return StoreLockedError(f"store {path} belongs to a memstore server (PID {starting.get('pid')}) "
                                        f"that is still starting", hint="retry in a moment: Memory(path) and the CLI "
                                        "then connect to it", path=path)
            return StoreLockedError(
                f"store {path} is held by another process ({holder}), which is not a memstore server",
                hint=f"close it there, or run `memstore serve --store {path}` and connect everything to it "
                     f"(Memory(path), the CLI and the dashboard then become its clients)",
                path=path, holder=holder)
    return explain_open_error(path, read_only, exc)


def open_count(path: str) -> int:
    """How many Database objects of this process have `path` open."""
    with _OPEN_LOCK:
        return _OPEN.get(os.path.realpath(path), 0)

