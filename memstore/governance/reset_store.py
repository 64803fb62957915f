"""`reset()`: every base table emptied in one unit, except the records that hold no memory content.

Kept: erasure receipts (proof of past erasures), the export registry (forget() must still find
those files), retention policies (settings), the pending-erasure journal, the schema and its
migrations, the api tokens (credentials). Every other base table is found from the catalog, so a new
table is emptied too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memstore.governance.catalog import relation, table_columns
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.store.database import Database

RESET_KEEPS = frozenset({"store_meta", "schema_migrations", "erasure_receipts", "exports", "retention_policies",
                         "pending_erasures", "api_tokens"})


def reset_store(db: Database) -> dict[str, Any]:
    """Empty every base table but `RESET_KEEPS` in ONE unit; returns the tables emptied."""
    tables = sorted(k for k in table_columns(db) if k[0] == "main" and k[1] not in RESET_KEEPS)
    with write_unit(db, "reset"):
        for schema, table in tables:
            db.run(f"reset:{table}", sql=f"DELETE FROM {relation(schema, table)}")
    return {"message": "Memory store reset", "tables": [t for _, t in tables]}
