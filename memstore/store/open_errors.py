"""DuckDB's errors on opening a store file, and the fatal ones on writing it (a full disk, an
invalidated database), said in memstore's words (no traceback to users).

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> str(explain_open_error(d, False, OSError("Is a directory"))).startswith(f"store path {d} is a directory")
True
"""
from __future__ import annotations

import os
import shutil

import duckdb

from memstore.core.errors import ConfigError, MemstoreError, StoreFullError, StoreInvalidatedError, StoreMismatchError


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


def explain_fatal_error(path: str, exc: BaseException) -> tuple[MemstoreError | None, bool]:
    """(StoreFullError / StoreInvalidatedError for a disk-full or invalidating DuckDB error of the
    store at `path`, whether DuckDB invalidated its open database), or (None, False) for any other.

    >>> explain_fatal_error(":memory:", RuntimeError("syntax error"))
    (None, False)
    >>> type(explain_fatal_error(":memory:", OSError("No space left on device"))[0]).__name__
    'StoreFullError'
    """
    text = str(exc)
    fatal = isinstance(exc, duckdb.FatalException) or "database has been invalidated" in text
    full = "No space left on device" in text or "disk is full" in text.lower()
    if not fatal and not full:
        return None, False
    where = os.path.dirname(os.path.abspath(path)) if path != ":memory:" else "."
    free = shutil.disk_usage(where).free
    wal = os.path.getsize(path + ".wal") if os.path.exists(path + ".wal") else 0
    what = ("DuckDB invalidated the open database; what was committed before is kept and memstore "
            "reopens the file on the next call" if fatal else "the write was rolled back")
    if full:
        needed = wal + (8 << 20)
        return StoreFullError(
            f"store {path}: the disk is full ({free:,} bytes free; the pending write and its checkpoint "
            f"need about {needed:,}): {what}", hint="free disk space, then call again",
            needed_bytes=needed, free_bytes=free, path=path), fatal
    return StoreInvalidatedError(f"store {path}: {what}: {text.splitlines()[0][:300]}",
                                 hint="fix the cause (disk, permissions), then call again", path=path), fatal


def check_store_meta(path: str, meta: dict[str, str], dim: int, embedder: str) -> int:
    """The store's embedding size from its `store_meta` rows; StoreMismatchError when the configured
    embedder gives another size, a RuntimeWarning when it is another embedder of the same size.

    >>> check_store_meta("s.duckdb", {"dim": "4", "embedder": "e"}, 4, "e")
    4
    """
    stored_dim = int(meta["dim"])
    if stored_dim != dim:
        raise StoreMismatchError(
            f"store {path} holds {stored_dim}-d embeddings from {meta.get('embedder')!r}; "
            f"the configured embedder {embedder!r} gives {dim}-d",
            hint="open it with the embedder it was built with, or export and re-import with the new one")
    if meta.get("embedder") not in (None, embedder):
        import warnings

        warnings.warn(f"store {path} was embedded with {meta.get('embedder')!r}, the configured embedder is "
                      f"{embedder!r}: similarities between old and new vectors are meaningless. Open it with "
                      f"{meta.get('embedder')!r}, or re-embed it with the configured one: memstore reembed --store "
                      f"{path} --embedder PROVIDER[:MODEL] (Memory.reembed)",
                      RuntimeWarning, stacklevel=4)
    return stored_dim
