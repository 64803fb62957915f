"""Which store tables a shard publishes to the lake, and how each is laid out there.

Every lake table is the store's table plus three columns: `shard` (which store it came from),
`_key` (the row's identity: its id, or an md5 of its natural key) and `_hash` (md5 of the row), by
which a publish finds what changed. Tables are partitioned by `shard` and, where rows belong to a
user, by `bucket(16, user_id)`: `WHERE shard = 's1'` or `WHERE user_id = 'alice'` reads a fraction
of the files, and an erasure rewrites only the files of the user's bucket.

Type changes: FLOAT[N] becomes FLOAT[] (DuckLake has no fixed-size arrays), JSON becomes VARCHAR.

>>> lake_type("FLOAT[384]"), lake_type("JSON"), lake_type("VARCHAR[]")
('FLOAT[]', 'VARCHAR', 'VARCHAR[]')
>>> key_expr("keyword_postings")
'md5(concat_ws(chr(31), "memory_id", "term"))'
"""
from __future__ import annotations

import re

from memstore.governance.catalog import quote_ident

# table -> key columns ("id" when the table has one); the order is the publish order
KEYS: dict[str, tuple[str, ...]] = {
    "memories": ("id",),
    "history": ("id",),
    "entities": ("id",),
    "entity_postings": ("entity_id", "memory_id"),
    "keyword_postings": ("memory_id", "term"),
    "memory_links": ("src_id", "dst_id", "kind"),
    "extraction_runs": ("id",),
    "messages": ("id",),
    "reads": ("id",),
}
# opt-in: messages (raw conversation text), reads (the audit of reads: who asked what about whom)
DEFAULT_TABLES = tuple(t for t in KEYS if t not in ("messages", "reads"))
BUCKETS = 16
EXTRA = {"shard": "VARCHAR", "_key": "VARCHAR", "_hash": "VARCHAR"}
PUBLISHES = "_publishes"        # the watermark: one row per publish, written in the publish's transaction


def lake_type(store_type: str) -> str:
    """The lake column type for a store column type (see module doc)."""
    t = store_type.upper()
    if re.fullmatch(r"FLOAT\[\d+\]", t):
        return "FLOAT[]"
    if t == "JSON":
        return "VARCHAR"
    return store_type


def key_expr(table: str) -> str:
    """SQL expression of a row's `_key`."""
    cols = KEYS[table]
    if cols == ("id",):
        return '"id"'
    return "md5(concat_ws(chr(31), " + ", ".join(quote_ident(c) for c in cols) + "))"


def select_list(columns: dict[str, str], *, embeddings: bool) -> list[tuple[str, str]]:
    """[(column, SQL expression read from the store)] of the columns published."""
    out = []
    for col, typ in columns.items():
        if col == "embedding" and not embeddings:
            continue
        lt = lake_type(typ)
        expr = quote_ident(col) if lt == typ else f"CAST({quote_ident(col)} AS {lt})"
        out.append((col, expr))
    return out


def hash_expr(columns: dict[str, str]) -> str:
    """md5 of every published column but the embedding (it follows the text), NULLs marked."""
    parts = [f"coalesce(CAST({quote_ident(c)} AS VARCHAR), chr(0))" for c in columns if c != "embedding"]
    return "md5(concat_ws(chr(31), " + ", ".join(parts) + "))"


def partition_clause(columns: dict[str, str]) -> str:
    """PARTITIONED BY list of a lake table."""
    return f"shard, bucket({BUCKETS}, user_id)" if "user_id" in columns else "shard"
