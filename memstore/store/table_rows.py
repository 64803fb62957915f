"""`Rows`: one table's rows as Python columns, typed by an Arrow schema.

An add builds a few rows per table; a write unit (ingest, group commit) joins many adds' rows and
converts each table to Arrow ONCE when it writes it, and a single add hands its columns to a
parameterised INSERT without any Arrow at all. Converting per add cost ~1 ms of an add's write.

>>> import pyarrow as pa
>>> r = Rows(pa.schema([("id", pa.string()), ("n", pa.int32())]), {"id": ["a"], "n": [1]})
>>> r.extend(Rows(r.schema, {"id": ["b"], "n": [2]}))
>>> r.num_rows, r.arrow().column("n").to_pylist()
(2, [1, 2])
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


class Rows:
    """Columns (lists) named and typed by `schema`; a fixed-size-list column holds NumPy vectors."""

    __slots__ = ("schema", "cols")

    def __init__(self, schema: pa.Schema, cols: dict[str, list[Any]] | None = None) -> None:
        self.schema = schema
        self.cols = cols if cols is not None else {f.name: [] for f in schema}

    @property
    def num_rows(self) -> int:
        return len(next(iter(self.cols.values()))) if self.cols else 0

    @property
    def column_names(self) -> list[str]:
        return list(self.cols)

    def column(self, name: str) -> list[Any]:
        return self.cols[name]

    def set(self, name: str, values: list[Any]) -> None:
        """Replace (or add, typed as `typ` in the schema) one column."""
        self.cols[name] = list(values)

    def extend(self, other: Rows) -> None:
        """Append another Rows of the same table (the same columns)."""
        for name, values in other.cols.items():
            self.cols[name].extend(values)

    def copy(self) -> Rows:
        return Rows(self.schema, {k: list(v) for k, v in self.cols.items()})

    def arrow(self) -> pa.Table:
        """The rows as ONE Arrow table (one chunk)."""
        arrays = []
        for f in self.schema:
            values = self.cols[f.name]
            if pa.types.is_fixed_size_list(f.type):
                dim = f.type.list_size
                flat = np.ascontiguousarray(np.asarray(values, dtype=np.float32).reshape(-1, dim)).reshape(-1)
                arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dim))
            else:
                arrays.append(pa.array(values, f.type))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def __repr__(self) -> str:
        return f"Rows({self.num_rows} rows: {', '.join(self.cols)})"


def as_arrow(rows: Any) -> pa.Table:
    """An Arrow table from Rows (or an Arrow table as it is)."""
    return rows.arrow() if isinstance(rows, Rows) else rows
