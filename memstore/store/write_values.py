"""The shapes values take on their way into DuckDB: `Database.insert_values`' statements (vectors as
parameters, or from a registered Arrow table past `ARROW_FLOATS` floats) and Arrow vector columns.

>>> vectors_table([[1, 0], [0, 1]], 2, id=["a", "b"]).column_names
['id', 'embedding']
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from memstore.store.quoting import sql_ident


def is_vector(sql_type: str) -> bool:
    """A FLOAT[dim] column (not a VARCHAR[] list)."""
    return sql_type.endswith("]") and not sql_type.endswith("[]")


# From this many vector floats in one insert_values on, the vectors cross as Arrow: binding them as
# parameters (~1.4 us a float) costs more than registering a table (~1.5 ms). 4 vectors of 384-d.
ARROW_FLOATS = 1536


def insert_shape(table: str, names: tuple[str, ...], types: dict[str, str]) -> tuple[Any, ...]:
    """insert_values' statements for a table and columns: (plain columns, vector columns, floats
    per row, the unnest statement ({view}: the vectors' registered table), the VALUES head and row)."""
    plain = tuple(c for c in names if not is_vector(types[c]))
    vectors = tuple(c for c in names if is_vector(types[c]))
    floats = sum(int(types[c][types[c].rindex("[") + 1:-1]) for c in vectors)
    quoted = ", ".join(sql_ident(c) for c in plain + vectors)
    select = ", ".join(f"unnest(?::{types[c]}[]) AS {sql_ident(c)}" for c in plain)
    if not vectors:
        select = f"SELECT {select}"
    elif plain:
        select = f"SELECT s.*, v.* FROM (SELECT {select}) s POSITIONAL JOIN {{view}} v"
    else:
        select = "SELECT v.* FROM {view} v"
    values_head = f"INSERT INTO {sql_ident(table)} ({', '.join(sql_ident(c) for c in names)}) VALUES "
    values_row = "(" + ", ".join(f"?::{types[c]}" for c in names) + ")"
    return plain, vectors, floats, f"INSERT INTO {sql_ident(table)} ({quoted}) {select}", values_head, values_row


def vector_array(values: list[Any], sql_type: str) -> pa.FixedSizeListArray:
    """Vectors (NumPy arrays or lists) as one Arrow FLOAT[dim] column.

    >>> vector_array([[1, 2], [3, 4]], "FLOAT[2]").to_pylist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    dim = int(sql_type[sql_type.rindex("[") + 1:-1])
    flat = np.asarray(values, dtype=np.float32).reshape(len(values), dim) if len(values) else np.zeros((0, dim), np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.ravel()), dim)


def param_column(col: pa.ChunkedArray, sql_type: str) -> list[Any]:
    """One column as Python parameters; vectors as NumPy arrays (binds far faster than lists)."""
    if pa.types.is_fixed_size_list(col.type) or pa.types.is_list(col.type) and sql_type.endswith("]") \
            and not sql_type.endswith("[]"):
        arr = col.combine_chunks()
        width = arr.type.list_size if pa.types.is_fixed_size_list(arr.type) else None
        if width is not None and arr.null_count == 0:
            flat = arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
            return list(flat)
    return list(col.to_pylist())


def vectors_table(vectors: Any, dim: int, **columns: Any) -> pa.Table:
    """Arrow table with an `embedding` FLOAT[dim] column (plus extra columns) from a 2-D array."""
    arr = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1, dim))
    emb = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1), type=pa.float32()), dim)
    data = {k: v for k, v in columns.items()}
    data["embedding"] = emb
    return pa.table(data)
