"""Opening source files: plain files or a member of a .zip export, as a byte stream whose invalid
UTF-8 is repaired (U+FFFD) and counted, so one bad byte does not cost the rest of the file.

>>> import io
>>> s = Utf8Repair(io.BytesIO(b'{"a": "caf\\xe9 ok"}'))
>>> s.read().decode(), s.bad, s.first_bad_at
('{"a": "caf\ufffd ok"}', 1, 10)
"""
from __future__ import annotations

import codecs
import contextlib
import io
import os
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from memstore.ingest.types import SourceFormatError

# Bytes per read. Large on purpose: ijson joins a long string chunk by chunk (quadratic), so a
# 50 MB message costs ~25 s to parse with 64 KB reads and well under a second with 4 MB ones.
READ_CHUNK = 4 << 20
_STATE = threading.local()
_HANDLER = "memstore-ingest-repair"


def _repair(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    found = getattr(_STATE, "found", None)
    if found is not None:
        found.append(exc.start)
    return "\ufffd", exc.end


codecs.register_error(_HANDLER, _repair)


class Utf8Repair(io.RawIOBase):
    """A readable byte stream that yields valid UTF-8: invalid sequences become U+FFFD. `bad` counts
    them and `first_bad_at` is the byte offset of the first one (approximate across chunk edges)."""

    def __init__(self, raw: BinaryIO, chunk_size: int = READ_CHUNK) -> None:
        self._raw, self._chunk = raw, chunk_size
        self._dec = codecs.getincrementaldecoder("utf-8")(errors=_HANDLER)
        self._buf = memoryview(b"")
        self._consumed = 0
        self.bad = 0
        self.first_bad_at: int | None = None

    def readable(self) -> bool:
        return True

    def _fill(self) -> bool:
        """Decode the next chunk into the buffer; False at the end of the data."""
        while not len(self._buf):
            if self._dec is None:
                return False
            data = self._raw.read(self._chunk)
            _STATE.found = found = []
            try:
                text = self._dec.decode(data, final=not data)
            finally:
                _STATE.found = None
            if found:
                self.bad += len(found)
                if self.first_bad_at is None:
                    self.first_bad_at = max(0, self._consumed + found[0])
            if self._consumed == 0 and text.startswith("\ufeff"):
                text = text[1:]          # a UTF-8 byte-order mark is not content
            self._consumed += len(data)
            if not data:
                self._dec = None  # type: ignore[assignment]
            self._buf = memoryview(text.encode("utf-8"))
        return True

    def peek(self, n: int = 1) -> bytes:
        """Up to `n` bytes ahead (from the current chunk) without consuming them."""
        return bytes(self._buf[:n]) if self._fill() else b""

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if not self._fill():
            return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


MAX_ZIP_RATIO = 100          # chat exports deflate ~5-15:1; a member inflating more is refused ...
MAX_ZIP_CHECKED = 64 << 20   # ... once it is this big (small members may compress better)
MAX_ZIP_MEMBER = 16 << 30    # and nothing over 16 GB inflated


def check_zip_member(info: zipfile.ZipInfo, archive: str) -> None:
    """Refuse a zip member whose declared size or compression ratio says zip bomb (zipfile reads
    a member only up to its declared size, so the declaration bounds the work).

    >>> i = zipfile.ZipInfo("conversations.json"); i.file_size, i.compress_size = 1 << 30, 1 << 20
    >>> check_zip_member(i, "x.zip")
    Traceback (most recent call last):
    ...
    memstore.core.errors.SourceFormatError: x.zip: conversations.json inflates 1,024 times (1,073,741,824 bytes from 1,048,576): refused as a likely zip bomb — unzip it yourself and pass the file if it is genuine
    """
    ratio = info.file_size / max(1, info.compress_size)
    if info.file_size > MAX_ZIP_MEMBER or (info.file_size > MAX_ZIP_CHECKED and ratio > MAX_ZIP_RATIO):
        raise SourceFormatError(f"{archive}: {info.filename} inflates {ratio:,.0f} times ({info.file_size:,} bytes from "
                                f"{info.compress_size:,}): refused as a likely zip bomb",
                                hint="unzip it yourself and pass the file if it is genuine", file=archive)


def zip_member(zf: zipfile.ZipFile, wanted: tuple[str, ...]) -> str | None:
    """The first member whose base name is in `wanted` (shallowest path first)."""
    names = sorted((n for n in zf.namelist() if not n.endswith("/")), key=lambda n: (n.count("/"), n))
    return next((n for n in names if n.rsplit("/", 1)[-1] in wanted), None)


@contextlib.contextmanager
def open_bytes(path: str | os.PathLike, *, member: str | None = None,
               wanted: tuple[str, ...] = ("conversations.json",)) -> Iterator[Utf8Repair]:
    """Open `path` (or its zip member) as a repaired UTF-8 byte stream."""
    p = Path(path)
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as zf:
            name = member or zip_member(zf, wanted)
            if name is None:
                raise SourceFormatError(f"{p}: zip archive has no {' or '.join(wanted)}",
                                        hint="unzip it and pass the conversations file itself", file=str(p))
            check_zip_member(zf.getinfo(name), str(p))
            with zf.open(name) as raw:
                yield Utf8Repair(raw)
        return
    with open(p, "rb") as raw:
        yield Utf8Repair(raw)


def file_size(path: str | os.PathLike) -> int:
    """Size in bytes of the data to read (uncompressed size for a zip)."""
    p = Path(path)
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as zf:
            return sum(i.file_size for i in zf.infolist())
    return p.stat().st_size
