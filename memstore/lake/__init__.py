"""One lake for every shard: DuckLake (Parquet files + a PostgreSQL catalog) that shards publish
into and analysts read, with erasure that reaches it.

- `publish(db, lake, data_path=...)` — a shard's changes since its last publish, in one lake
  transaction (memstore/lake/publish.py); `memstore publish --store S --lake L --data-path DIR`,
  `memstore serve --publish-to L --publish-every 60s`.
- `connect(lake)` — read-only, the store's table and view names over all shards (reader.py).
- forget() on a shard that publishes erases the scope from the lake too (erasure.py); importing
  this package registers that step with memstore/governance/downstream.py.

>>> from memstore.governance.downstream import FINISHERS
>>> "lake" in FINISHERS
True
"""
from __future__ import annotations

from memstore.governance import downstream as _downstream
from memstore.lake.erasure import erase_from_lake, finish_lake_erasure
from memstore.lake.publish import PublishReport, publish
from memstore.lake.reader import Lake, connect

_downstream.register("lake", finish_lake_erasure)

__all__ = ["Lake", "PublishReport", "connect", "erase_from_lake", "publish"]
