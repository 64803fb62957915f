"""The lake's one door: a DuckDB connection with DuckLake attached over a PostgreSQL catalog.

Every statement memstore sends to the lake goes through `LakeSession.run` (named, traced, errors as
LakeError), as every statement to a store goes through `Database`. Extensions load offline from
their PyPI packages (`duckdb-extension-ducklake`, `duckdb-extension-postgres`).

A lake is named by its catalog, `postgres:<libpq string>` (e.g. `postgres:dbname=lake host=db1`);
`ducklake:postgres:...` is accepted too. The data path (a folder of Parquet files) is given once,
when the lake is created, and is kept in the catalog.

>>> parse_lake("postgres:dbname=lake host=127.0.0.1 port=5432")
'dbname=lake host=127.0.0.1 port=5432'
>>> parse_lake("sqlite:x.db")
Traceback (most recent call last):
...
memstore.core.errors.LakeError: lake 'sqlite:x.db' is not a PostgreSQL catalog — name it as postgres:dbname=... host=... port=... (DuckLake on PostgreSQL is the only catalog memstore publishes to)
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from memstore.core.errors import LakeError, LakeUnreachableError
from memstore.store.extensions import extension_file

LAKE = "lake"          # the DuckLake catalog's name inside a session
PG = "lake_pg"         # the same PostgreSQL database attached directly (maintenance: VACUUM, CHECKPOINT)


def parse_lake(lake: str) -> str:
    """The libpq connection string of a lake name (see module doc); LakeError for anything else."""
    text = (lake or "").strip()
    for prefix in ("ducklake:postgres:", "postgres:", "postgresql:"):
        if text.startswith(prefix) and text[len(prefix):].strip():
            return text[len(prefix):].strip()
    raise LakeError(f"lake {lake!r} is not a PostgreSQL catalog",
                    hint="name it as postgres:dbname=... host=... port=... "
                         "(DuckLake on PostgreSQL is the only catalog memstore publishes to)")


def quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _extension_paths() -> tuple[Path, Path]:
    lake = extension_file("ducklake")
    pg = extension_file("postgres")
    if lake is None or pg is None:
        raise LakeError("the DuckLake extensions are not installed",
                        hint="pip install 'memstore[lake]' (duckdb-extension-ducklake and duckdb-extension-postgres, "
                             f"version {duckdb.__version__})")
    # The postgres package ships `postgres.duckdb_extension`, but the extension's entry point is
    # named after `postgres_scanner`: DuckDB finds it from the file name, so load it through a link.
    folder = Path(tempfile.gettempdir()) / f"memstore-duckdb-ext-{duckdb.__version__}-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    link = folder / "postgres_scanner.duckdb_extension"
    if not link.exists() or link.resolve() != pg.resolve():
        tmp = folder / f".link-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(pg)
        os.replace(tmp, link)
    return lake, link


class LakeSession:
    """One DuckDB connection with the lake attached as `lake` (and, for maintenance, its catalog
    database as `lake_pg`). Close it after use.

    >>> # with LakeSession("postgres:dbname=lake host=127.0.0.1", data_path="/data/lake") as s:
    >>> #     s.scalar("SELECT count(*) FROM lake.memories")
    """

    def __init__(self, lake: str, *, data_path: str | os.PathLike | None = None, read_only: bool = False,
                 maintenance: bool = False, trace: Callable[[str, str, Any, float], None] | None = None) -> None:
        self.lake, self.dsn, self.read_only, self.trace = lake, parse_lake(lake), read_only, trace
        self.data_path = os.path.abspath(os.fspath(data_path)) if data_path else None
        ducklake, pg = _extension_paths()
        self.con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": "false",
                                                      "autoload_known_extensions": "false"})
        try:
            self.con.execute(f"LOAD {quote(str(ducklake))}")
            self.con.execute(f"LOAD {quote(str(pg))}")
            opts = []
            if self.data_path:
                os.makedirs(self.data_path, exist_ok=True)
                opts.append(f"DATA_PATH {quote(self.data_path.rstrip('/') + '/')}")
            if read_only:
                opts.append("READ_ONLY")
            self.run("attach", sql=f"ATTACH {quote('ducklake:postgres:' + self.dsn)} AS {LAKE}"
                                   + (f" ({', '.join(opts)})" if opts else ""))
            if maintenance:
                self.run("attach:pg", sql=f"ATTACH {quote(self.dsn)} AS {PG} (TYPE postgres)")
        except BaseException:
            self.con.close()
            raise

    def run(self, name: str, params: Any = None, *, sql: str) -> duckdb.DuckDBPyConnection:
        """Execute `sql` on the lake connection; a failure raises LakeError (LakeUnreachableError when
        PostgreSQL did not answer) naming the statement."""
        start = time.perf_counter()
        try:
            cur = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        except duckdb.Error as exc:
            raise _lake_error(name, exc) from exc
        if self.trace is not None:
            self.trace(f"lake:{name}", sql, params, time.perf_counter() - start)
        return cur

    def rows(self, name: str, params: Any = None, *, sql: str) -> list[tuple]:
        cur = self.run(name, params, sql=sql)
        try:
            return cur.fetchall()
        except duckdb.Error as exc:
            raise _lake_error(name, exc) from exc

    def scalar(self, sql: str, params: Any = None) -> Any:
        rows = self.run("scalar", params, sql=sql).fetchall()   # all: a half-read result stays uncommitted
        return rows[0][0] if rows else None

    def arrow(self, name: str, params: Any = None, *, sql: str) -> pa.Table:
        return self.run(name, params, sql=sql).to_arrow_table()

    def pg(self, name: str, sql: str, *, transaction: bool = True) -> None:
        """Run a statement on the catalog's PostgreSQL itself (VACUUM needs `transaction=False`)."""
        self.run(f"pg:{name}", sql=f"CALL postgres_execute({quote(PG)}, {quote(sql)}"
                                    + (", use_transaction => false)" if not transaction else ")"))

    def pg_rows(self, name: str, sql: str) -> list[tuple]:
        """Rows of a query run on the catalog's PostgreSQL."""
        return self.rows(f"pg:{name}", sql=f"SELECT * FROM postgres_query({quote(PG)}, {quote(sql)})")

    @contextlib.contextmanager
    def registered(self, name: str, table: pa.Table) -> Iterator[None]:
        """Make an Arrow table visible to SQL as `name` while the block runs."""
        self.con.register(name, table)
        try:
            yield
        finally:
            self.con.unregister(name)

    @contextlib.contextmanager
    def atomic(self, step: str) -> Iterator[None]:
        """BEGIN … COMMIT on the lake: one DuckLake snapshot, all or nothing."""
        self.run(f"{step}:begin", sql="BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            raise
        self.run(f"{step}:commit", sql="COMMIT")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()

    def __enter__(self) -> LakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_UNREACHABLE = ("could not connect", "connection refused", "connection to server", "server closed the connection",
                "no such file or directory\n\tis the server running", "timeout expired", "could not translate host")


def _lake_error(name: str, exc: duckdb.Error) -> LakeError:
    text = str(exc)
    if any(s in text.lower() for s in _UNREACHABLE):
        return LakeUnreachableError(f"lake statement {name}: PostgreSQL did not answer ({text.splitlines()[0][:300]})",
                                    hint="check the catalog is up and the connection string is right; "
                                         "the store keeps its changes and the next publish sends them")
    return LakeError(f"lake statement {name} failed: {text.splitlines()[0][:500]}",
                     hint="nothing of this step was committed to the lake; see the message for the cause",
                     detail=text[:4000])
