"""Stream the items of a top-level JSON array one at a time, with bounded memory.

A byte-level scanner splits the array into items (it tracks strings, escapes and brackets, and
jumps through string contents with a C-speed regex search), so only one item's bytes are ever held;
each item is then decoded with `json.loads`. Bounds, by design:

- an item nested deeper than `max_depth` levels, or larger than `max_item_bytes`, is not decoded:
  it is scanned to its end without being buffered and recorded as a skipped Problem naming the
  file, the item's position and byte offset (a 100k-level conversations.json costs no memory; a 1 GB
  title inside a zip is skipped, not joined);
- a file cut off or damaged stops with SourceFormatError saying how far it was read.
(ijson joined long strings chunk by chunk — quadratic — and built any depth of nesting.)

>>> import io
>>> from memstore.ingest.sources import Utf8Repair
>>> items = iter_items(Utf8Repair(io.BytesIO(b'[{"a": 1}, {"a": "x]"}, {"a"')), "x.json", what="conversation")
>>> next(items), next(items)
({'a': 1}, {'a': 'x]'})
>>> next(items)
Traceback (most recent call last):
...
memstore.core.errors.SourceFormatError: x.json: the JSON is cut off or damaged after conversation #2 (near byte 28): the file ends inside conversation #3 — the 2 conversation(s) before it were read; re-export or repair the file and run the same command again (nothing is ingested twice)
>>> problems = []
>>> list(iter_items(Utf8Repair(io.BytesIO(b'[[[[[1]]]], 2]')), "d.json", problems=problems, max_depth=3))
[2]
>>> problems[0].reason
'item #1 (byte 1) is nested deeper than 3 levels: skipped'
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import ijson

from memstore.ingest.sources import READ_CHUNK, Utf8Repair
from memstore.ingest.types import Problem, SourceFormatError

MAX_DEPTH = 64                    # chat exports nest ~10 levels; json.loads recursion stays far away
MAX_ITEM_BYTES = 64 << 20         # one conversation; over it: skipped with a reason (RSS stays bounded)
_IN_STRING = re.compile(rb'["\\]')
_STRUCTURE = re.compile(rb'["\[\]{},]')
_SPACE = b" \t\r\n"


def iter_items(stream: Utf8Repair, file: str, *, what: str = "item", prefix: str = "item",
               problems: list[Problem] | None = None, max_depth: int = MAX_DEPTH,
               max_item_bytes: int = MAX_ITEM_BYTES) -> Iterator[Any]:
    """Yield each element of the array at `prefix` ("item" = the top-level array, split with the
    bounded scanner; any other prefix is read with ijson). Skipped items go to `problems`."""
    if prefix != "item":
        yield from _ijson_items(stream, file, what, prefix)
        return
    yield from _ArraySplitter(stream, file, what, problems, max_depth, max_item_bytes).items()


class _ArraySplitter:
    def __init__(self, stream: Utf8Repair, file: str, what: str, problems: list[Problem] | None,
                 max_depth: int, max_item_bytes: int) -> None:
        self.stream, self.file, self.what, self.problems = stream, file, what, problems
        self.max_depth, self.max_item_bytes = max_depth, max_item_bytes
        self.n = 0                  # items started
        self.read = 0               # items yielded

    def _fail(self, detail: str) -> SourceFormatError:
        where = f"after {self.what} #{self.read}" if self.read else f"before the first {self.what}"
        return SourceFormatError(
            f"{self.file}: the JSON is cut off or damaged {where} (near byte {self.stream._consumed}): {detail}",
            hint=(f"the {self.read} {self.what}(s) before it were read; " if self.read else "")
            + "re-export or repair the file and run the same command again (nothing is ingested twice)",
            file=self.file, items_read=self.read)

    def items(self) -> Iterator[Any]:
        depth = 0                   # 0: before the array; 1: between items; >1: inside an item
        in_string = escape = False
        started = False             # the top-level '[' was seen
        item: list[bytes] | None = None   # bytes of the current item (None: between items or skipping)
        in_item = False
        size = deepest = 0
        skip_reason = ""
        item_at = 0
        offset = 0                  # bytes of the stream before this chunk
        while True:
            chunk = self.stream.read(READ_CHUNK)
            if not chunk:
                break
            if offset == 0 and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
                offset = 3
            i, end, mark = 0, len(chunk), 0          # mark: start of the part of chunk in the item
            while i < end:
                if in_string:
                    if escape:
                        escape, i = False, i + 1
                        continue
                    m = _IN_STRING.search(chunk, i)
                    if m is None:
                        i = end
                        break
                    i = m.start()
                    if chunk[i] == 0x5C:             # backslash
                        escape, i = True, i + 1
                        continue
                    in_string, i = False, i + 1
                    if depth == 1 and in_item:       # a string item ended
                        yield from self._end(item, chunk, mark, i, size + i - mark, skip_reason, item_at)
                        item, in_item, mark = None, False, i
                    continue
                if not started:
                    c = chunk[i]
                    if c in _SPACE:
                        i += 1
                        continue
                    if c != 0x5B:
                        raise SourceFormatError(f"{self.file}: expected a JSON array of {self.what}s, found "
                                                f"{chr(c)!r} at byte {offset + i}", file=self.file)
                    started, depth, i = True, 1, i + 1
                    continue
                if depth == 1 and not in_item:        # between items: skip spaces and commas
                    c = chunk[i]
                    if c in _SPACE or c == 0x2C:
                        i += 1
                        continue
                    if c == 0x5D:                     # the array ends
                        return
                    in_item, item, mark, size, deepest, skip_reason = True, [], i, 0, 1, ""
                    item_at = offset + i
                    self.n += 1
                m = _STRUCTURE.search(chunk, i)
                if m is None:
                    i = end
                    break
                i = m.start()
                c = chunk[i]
                if c == 0x22:
                    in_string = True
                elif c in (0x5B, 0x7B):
                    depth += 1
                    if depth - 1 > deepest:
                        deepest = depth - 1
                        if deepest > self.max_depth and not skip_reason:
                            skip_reason = f"is nested deeper than {self.max_depth} levels"
                            item = None
                elif c in (0x5D, 0x7D):
                    depth -= 1
                    if depth == 0:                    # ']' closing the array right after a scalar
                        if in_item:
                            yield from self._end(item, chunk, mark, i, size + i - mark, skip_reason, item_at)
                        return
                    if depth == 1:
                        yield from self._end(item, chunk, mark, i + 1, size + i + 1 - mark, skip_reason, item_at)
                        item, in_item, mark = None, False, i + 1
                elif c == 0x2C and depth == 1 and in_item:   # a scalar item ended
                    yield from self._end(item, chunk, mark, i, size + i - mark, skip_reason, item_at)
                    item, in_item, mark = None, False, i
                i += 1
            if in_item:
                size += end - mark
                if size > self.max_item_bytes and not skip_reason:
                    skip_reason = f"is larger than {self.max_item_bytes:,} bytes"
                    item = None
                if item is not None:
                    item.append(chunk[mark:])
            offset += len(chunk)
        if not started:
            raise SourceFormatError(f"{self.file}: the file is empty, expected a JSON array of {self.what}s",
                                    file=self.file)
        raise self._fail(f"the file ends inside {self.what} #{self.n}" if in_item or depth > 1
                         else "the array is not closed")

    def _end(self, item: list[bytes] | None, chunk: bytes, mark: int, stop: int, size: int, skip_reason: str,
             item_at: int) -> Iterator[Any]:
        if not skip_reason and size > self.max_item_bytes:
            skip_reason = f"is larger than {self.max_item_bytes:,} bytes"
        if skip_reason or item is None:
            if self.problems is not None:
                self.problems.append(Problem(self.file, f"{self.what} #{self.n} (byte {item_at}) {skip_reason}: "
                                                        "skipped", conversation=f"#{self.n}"))
            return
        data = b"".join(item) + chunk[mark:stop]
        try:
            value = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise self._fail(f"{self.what} #{self.n} is not valid JSON ({str(exc).splitlines()[0][:120]})") from None
        self.read += 1
        yield value


def _ijson_items(stream: Utf8Repair, file: str, what: str, prefix: str) -> Iterator[Any]:
    n = 0
    try:
        for item in ijson.items(stream, prefix, use_float=True, buf_size=READ_CHUNK):
            n += 1
            yield item
    except ijson.JSONError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = f"after {what} #{n}" if n else f"before the first {what}"
        raise SourceFormatError(
            f"{file}: the JSON is cut off or damaged {where} (near byte {stream._consumed}): {first}",
            hint=(f"the {n} {what}(s) before it were read; " if n else "")
            + "re-export or repair the file and run the same command again (nothing is ingested twice)",
            file=file, items_read=n) from None
