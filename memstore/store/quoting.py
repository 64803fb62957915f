"""Quote values that DuckDB cannot take as bound parameters (COPY's target path, identifiers).

>>> sql_string("exports/it's here.parquet")
"'exports/it''s here.parquet'"
>>> sql_ident('odd"name')
'"odd""name"'
"""
from __future__ import annotations

import os

from sqlglot import exp

from memstore.core.errors import InvalidInputError


def sql_string(value: str | os.PathLike[str]) -> str:
    """A single-quoted SQL string literal (quotes doubled by sqlglot); NUL bytes are refused."""
    text = os.fspath(value)
    if "\x00" in text:
        raise InvalidInputError(f"SQL string contains a NUL byte: {text!r}", hint="remove the NUL (\\x00) character")
    return exp.Literal.string(text).sql(dialect="duckdb")


def sql_ident(name: str) -> str:
    """A double-quoted SQL identifier."""
    if "\x00" in name:
        raise InvalidInputError(f"SQL identifier contains a NUL byte: {name!r}", hint="remove the NUL (\\x00) character")
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")
