"""Who holds a store file: the owner's announcement next to it, and DuckDB's lock error read back.

A running `memstore serve` announces itself in `<store>.server.json` (memstore/wire/discovery.py
writes it); the store reads it only to word a lock error ("belongs to a server that is still
starting" vs "held by another process"). These are facts about the file, so they live with the store.

>>> lock_holder(OSError("IO Error: Could not set lock on file x: Conflicting lock is held in /usr/bin/python (PID 7). See ..."))
'/usr/bin/python (PID 7)'
>>> lock_holder(OSError("disk full")) is None
True
"""
from __future__ import annotations

import json
import os
from typing import Any


def server_file(store: str | os.PathLike[str]) -> str:
    """Where the server of `store` announces itself."""
    return os.path.abspath(os.fspath(store)) + ".server.json"


def read_info(store: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The announcement as written, or None when there is none (or it is unreadable)."""
    try:
        with open(server_file(store), encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and "url" in info else None


def pid_alive(pid: Any) -> bool:
    """Is there a process with this pid on this machine?"""
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def starting_server(store: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The announcement of a server of `store` that is alive and still starting, else None."""
    info = read_info(store)
    if info and info.get("state") == "starting" and pid_alive(info.get("pid")):
        return info
    return None


def lock_holder(error: BaseException) -> str | None:
    """'PID 123' style holder named by DuckDB's lock error, or None if it is not a lock error."""
    text = str(error)
    if "Could not set lock on file" not in text and "Conflicting lock" not in text:
        return None
    holder = text.split("Conflicting lock is held in", 1)[-1].split(". See", 1)[0].strip() if \
        "Conflicting lock is held in" in text else ""
    return holder or "another process"
