"""`Scratch`: an in-memory DuckDB with the same door as `Database`, for work that must not run on
the store (reading Parquet exports, an analyst's read-only query)."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from memstore.core.errors import QueryError


class Scratch:
    """An in-memory DuckDB for work that must not run on the store (Parquet files, an analyst's
    query): the same `run` / `rows` / `scalar` / `register` door as `Database`. Close it after use.

    >>> with Scratch("doc") as s:
    ...     s.register("t", pa.table({"x": [1, 2]}))
    ...     s.scalar("SELECT sum(x) FROM t")
    3
    """

    def __init__(self, name: str = "scratch", *, config: dict[str, str | bool | int | float | list[str]] | None = None,
                 trace: Callable[[str, str, Any, float], None] | None = None) -> None:
        self.name, self.trace = name, trace
        self._con = duckdb.connect(":memory:", config=config or {})

    def run(self, name: str, params: Any = None, *, sql: str) -> duckdb.DuckDBPyConnection:
        """Execute `sql`; a failure raises QueryError naming the statement (its `cause` is DuckDB's)."""
        start = time.perf_counter()
        try:
            cur = self._con.execute(sql, params) if params is not None else self._con.execute(sql)
        except duckdb.Error as exc:
            raise QueryError(f"{self.name}:{name}", sql, params, exc) from exc
        if self.trace is not None:
            self.trace(f"{self.name}:{name}", sql, params, time.perf_counter() - start)
        return cur

    def rows(self, name: str, params: Any = None, *, sql: str) -> list[tuple[Any, ...]]:
        return self.run(name, params, sql=sql).fetchall()

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.run("scalar", params, sql=sql).fetchone()
        return row[0] if row else None

    def register(self, name: str, data: pa.Table) -> None:
        """Make an Arrow table visible to SQL as `name` (replacing one of that name)."""
        with contextlib.suppress(duckdb.Error):
            self._con.unregister(name)
        self._con.register(name, data)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
