"""The whole fleet for the dashboard: the Overview's frames, and the Fleet page's, read from a lake.

`Fleet(lake)` holds one read-only lake connection (`memstore.lake.connect`) and answers with
Polars frames named like the store's, so the Overview renders a lake as it renders a store:

- `frame("scope_summary")`     the store's view over the lake: one row per shard and scope
- `frame("memories_per_day")`  the store's view over the lake: per shard, scope and day
- `frame("runs_by_status")`    extraction runs counted by shard, status, extractor (sql/lake/fleet_runs_by_status.sql)

The store's views come from `memstore.lake.connect`, which tells their rows apart by shard
(`memstore.lake.reader.with_shard`): there is no second copy of their SQL here.
- `shards()`                   one row per shard: publishes, last publish, what the lake holds of it
                               and what the shard held at its last publish (sql/lake/fleet_shards.sql)

Each query reads the lake's current snapshot (a publish since the last query is seen). Streamlit
runs pages on several threads; a lock keeps them off the one DuckDB connection at once.

>>> fleet_query("scope_summary")
'SELECT * FROM scope_summary'
>>> fleet_query("runs_by_status").startswith("-- fleet_runs_by_status")
True
>>> # fleet = Fleet("postgres:dbname=lake host=db1")
>>> # fleet.frame("scope_summary").group_by("shard").agg(pl.col("memories").sum())
"""
from __future__ import annotations

import threading

import polars as pl

from memstore.core.errors import LakeError
from memstore.lake import tables as T
from memstore.lake.reader import Lake, connect
from memstore.store.sqlfiles import load_sql

FRAMES = ("scope_summary", "memories_per_day", "runs_by_status")
NEEDS = ("memories", "extraction_runs", T.PUBLISHES)    # what the Overview reads: every publish writes them


STORE_VIEWS = ("scope_summary", "memories_per_day")     # read as the store's views (lake.connect)


def fleet_query(name: str) -> str:
    """The statement of a fleet frame: a store view's rows, or the text of `sql/lake/fleet_<name>.sql`."""
    return f"SELECT * FROM {name}" if name in STORE_VIEWS else load_sql(f"lake/fleet_{name}")


class Fleet:
    """A read-only lake for the dashboard (see module doc); `.close()` when done."""

    def __init__(self, lake: str) -> None:
        self.lake = lake
        self.messages = False
        self._lock = threading.Lock()
        self._lake: Lake = self._connect()

    def _connect(self) -> Lake:
        lk = connect(self.lake)
        try:
            missing = [t for t in NEEDS if t not in lk.tables]
            if missing:
                raise LakeError(f"the lake has no {', '.join(m.lstrip('_') for m in missing)} table yet",
                                hint="publish a shard into it first: memstore publish --store S --lake L "
                                     "--data-path DIR")
            self.messages = "messages" in lk.tables
            broken = [v for v in STORE_VIEWS if v not in lk.views]
            if broken:
                raise LakeError(f"the lake's {broken[0]} view failed: {lk.view_errors.get(broken[0], '?')}",
                                hint="publish every shard with this memstore version: memstore publish --store S "
                                     "--lake L --data-path DIR")
        except BaseException:
            lk.close()
            raise
        return lk

    def frame(self, name: str) -> pl.DataFrame:
        """One of FRAMES, over every shard."""
        if name not in FRAMES:
            raise LakeError(f"no fleet frame {name!r}", hint=f"one of {', '.join(FRAMES)}")
        return self._query(fleet_query(name))

    def shards(self) -> pl.DataFrame:
        """One row per shard (see module doc)."""
        return self._query(fleet_query("shards"))

    def _query(self, sql: str) -> pl.DataFrame:
        """`sql` on the lake. PostgreSQL down: LakeUnreachableError; back up, the same connection
        reads again (DuckDB's postgres extension reconnects: tests/test_dashboard_lake.py)."""
        with self._lock:
            return self._lake.frame(sql)

    @property
    def where(self) -> str:
        """One line for the sidebar: which lake (its catalog, never a password)."""
        return f"lake: `{redact(self.lake)}`"

    def close(self) -> None:
        with self._lock:
            self._lake.close()


def redact(lake: str) -> str:
    """A lake name without its password.

    >>> redact("postgres:dbname=lake host=db1 password=s3cret user=bob")
    'postgres:dbname=lake host=db1 password=*** user=bob'
    """
    parts = [("password=***" if p.lower().startswith("password=") else p) for p in lake.split(" ")]
    return " ".join(parts)
