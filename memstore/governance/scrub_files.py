"""Replace and remove files so their old bytes are overwritten, not just unlinked.

Unlinking a file (or `os.replace`-ing a new one over it) frees its blocks with the old bytes still
in them. These helpers zero the old content through an open descriptor first. That is as far as a
program can go: copy-on-write filesystems, SSD wear levelling, snapshots and backups are outside
its reach and need the operator's storage policy.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> old, new = os.path.join(d, "a"), os.path.join(d, "b")
>>> _ = open(old, "wb").write(b"secret"); _ = open(new, "wb").write(b"clean")
>>> replace_scrubbing(new, old)
>>> open(old, "rb").read(), os.path.exists(new)
(b'clean', False)
"""
from __future__ import annotations

import os
from pathlib import Path

_CHUNK = 8 << 20


def _zero_fd(fd: int) -> None:
    size = os.fstat(fd).st_size
    zeros = bytes(min(_CHUNK, size) or 1)
    os.lseek(fd, 0, os.SEEK_SET)
    left = size
    while left > 0:
        left -= os.write(fd, zeros[:min(left, len(zeros))])
    os.fsync(fd)


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file's content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_scrubbing(new: str | os.PathLike, old: str | os.PathLike) -> None:
    """Atomically put `new` in place of `old`, then zero the old inode's bytes.

    The rename is the commit point: before it `old` is intact, after it `old` holds the new content.
    The old bytes are overwritten through a descriptor opened before the rename."""
    fsync_path(new)
    fd = os.open(old, os.O_RDWR) if os.path.exists(old) else None
    try:
        os.replace(new, old)
        _fsync_dir(Path(old).parent)
        if fd is not None:
            _zero_fd(fd)
    finally:
        if fd is not None:
            os.close(fd)


def remove_scrubbing(path: str | os.PathLike) -> bool:
    """Zero a file's bytes, then delete it. False when there was no file."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        _zero_fd(fd)
    finally:
        os.close(fd)
    os.remove(path)
    return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
