"""What crosses the wire between `memstore serve` and its clients.

Calls: `POST /v1/<method>` with `{"args": [...], "kwargs": {...}}`. Answers: JSON for plain values;
Polars frames as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, no copy through
JSON). JSON keeps Python types that JSON lacks as tagged objects, so a client gets back what the
embedded `Memory` returns: datetimes, dates, tuples and IngestReports.

>>> import datetime as dt
>>> text = dumps({"at": dt.datetime(2024, 5, 1, 12, 30), "day": dt.date(2024, 5, 2), "k": (1, 2)})
>>> loads(text)
{'at': datetime.datetime(2024, 5, 1, 12, 30), 'day': datetime.date(2024, 5, 2), 'k': [1, 2]}
"""
from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

ARROW_STREAM = "application/vnd.apache.arrow.stream"
RESULT_KIND = "x-memstore-kind"          # response header: "frame", "json", "ingest_report"


def _default(obj: Any) -> Any:
    if isinstance(obj, dt.datetime):
        return {"$datetime": obj.isoformat()}
    if isinstance(obj, dt.date):
        return {"$date": obj.isoformat()}
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if hasattr(obj, "item") and callable(obj.item):      # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays
        return obj.tolist()
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return obj.to_dict()
    raise TypeError(f"cannot send a {type(obj).__name__} to the memstore server")


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if "$datetime" in obj:
            return dt.datetime.fromisoformat(obj["$datetime"])
        if "$date" in obj:
            return dt.date.fromisoformat(obj["$date"])
    return obj


def dumps(value: Any) -> str:
    """JSON text with datetimes and dates tagged (see module doc)."""
    return json.dumps(value, default=_default, ensure_ascii=False, allow_nan=True)


def loads(text: str | bytes) -> Any:
    """Inverse of `dumps`."""
    return json.loads(text, object_hook=_hook)


def frame_to_ipc(frame: Any) -> bytes:
    """A Polars frame (or Arrow table) as Arrow IPC stream bytes."""
    import pyarrow as pa

    table = frame.to_arrow() if hasattr(frame, "to_arrow") else frame
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def ipc_to_frame(data: bytes) -> Any:
    """Arrow IPC stream bytes as a Polars frame."""
    import polars as pl
    import pyarrow as pa

    table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()
    return pl.from_arrow(table)
