"""Stream the items of a top-level JSON array one at a time (ijson, C backend when available), turning
parser errors into SourceFormatError that says how far the file was read.

>>> import io
>>> from memstore.ingest.sources import READ_CHUNK, Utf8Repair
>>> items = iter_items(Utf8Repair(io.BytesIO(b'[{"a": 1}, {"a": 2}, {"a"')), "x.json", what="conversation")
>>> next(items), next(items)
({'a': 1}, {'a': 2})
>>> next(items)
Traceback (most recent call last):
...
memstore.ingest.types.SourceFormatError: x.json: the JSON is cut off or damaged after conversation #2 (near byte 25): parse error: premature EOF — the 2 conversation(s) before it were read; re-export or repair the file and run the same command again (nothing is ingested twice)
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ijson

from memstore.ingest.sources import READ_CHUNK, Utf8Repair
from memstore.ingest.types import SourceFormatError


def iter_items(stream: Utf8Repair, file: str, *, what: str = "item", prefix: str = "item") -> Iterator[Any]:
    """Yield each element of the array at `prefix` ("item" = the top-level array)."""
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
