"""DuckDB's errors on opening a store file, said in memstore's words (no traceback to users).

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> str(explain_open_error(d, False, OSError("Is a directory"))).startswith(f"store path {d} is a directory")
True
"""
from __future__ import annotations

import os

from memstore.core.errors import ConfigError, MemstoreError


def explain_open_error(path: str, read_only: bool, exc: BaseException) -> MemstoreError | None:
    """The typed error for a failed duckdb.connect(path), or None when it is none of these."""
    text = str(exc)
    if os.path.isdir(path):
        return ConfigError(f"store path {path} is a directory, not a store file",
                           hint=f"pass a file path, e.g. {os.path.join(path, 'memstore.duckdb')}", key="path")
    if "not a valid DuckDB database file" in text:
        return ConfigError(f"{path} is not a memstore store (not a DuckDB database file)",
                           hint="pass the .duckdb file memstore created, or a new path to create a store there",
                           key="path")
    if "different configuration" in text or "same database file" in text:
        mode = "read-only" if read_only else "writable"
        other = "writable" if read_only else "read-only"
        return ConfigError(f"{path} is already open {other} in this process; a {mode} Memory of it cannot be "
                           f"opened beside it", hint="use the Memory that is open (one per file and process), "
                           "or close it first", key="read_only")
    return None
