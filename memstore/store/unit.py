"""The one door for writes: every operation that changes the store's data runs as ONE unit of work here.

`write_unit(db, operation)` opens the unit (one DuckDB transaction: everything inside commits
together or not at all, and the scope cache hears of the commit through the store), and
`WRITE_OPERATIONS` names every kind of write the product makes, so "what can change a memory?" has
one answer. The add family (add, group commit, ingest, the mem0 import) writes through
`store/writer.py`, whose units are opened here too. No module outside `memstore/store/` opens a
transaction (tests/test_layers.py and tests/test_write_door.py check it).

>>> from memstore.store.database import Database
>>> db = Database(":memory:", dim=2, embedder="t")
>>> with write_unit(db, "set_retention"):
...     db.in_transaction
True
>>> with write_unit(db, "rename_everything"):
...     pass
Traceback (most recent call last):
...
ValueError: 'rename_everything' is not a write operation of memstore.store.unit.WRITE_OPERATIONS
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstore.store.database import Database

# operation (the part before ":" of a unit's name) -> what it writes
WRITE_OPERATIONS: dict[str, str] = {
    "commit": "one add(): its extraction run, messages, memories, postings, entities and history",
    "group_commit": "the server's adds of one group, together",
    "ingest": "the conversations of one ingest batch",
    "ingest_start": "an ingest job's row (resume bookkeeping)",
    "ingest_finish": "an ingest job's end state",
    "import_mem0": "a chunk of a mem0 store being imported",
    "record_failed_run": "the trace of a failed LLM call (no messages, no memories)",
    "update": "a memory's new text, embedding, postings and an UPDATE event",
    "delete": "memories removed with DELETE events",
    "reset": "every base table emptied except the records that hold no content",
    "resolve": "a person's decision on a contradiction",
    "purge_expired": "expired memories removed with EXPIRE events",
    "set_retention": "a retention policy", "clear_retention": "a retention policy removed",
    "apply_retention": "messages and history text past their retention",
    "forget": "a scope erased everywhere (and its attempts, exports and receipt)",
    "doctor": "a repair of a broken invariant",
    "import_parquet": "a Parquet export loaded into a new store",
    "merge_scope": "one scope's Parquet export merged into a shard that receives it (memstore cluster rebalance)",
    "register_export": "a Parquet export's registry row (erasure must find it)",
    "optimize": "memories and postings rewritten in scope order",
    "reembed": "a re-embedding job: its row, a batch of new vectors, the swap into memories and store_meta",
    "create_token": "a bearer token's row (its sha256, scope, rights, expiry)",
    "revoke_token": "a bearer token's row removed",
    "token_use": "when bearer tokens were last used (the server, at most once a minute)",
    "record_reads": "a batch of the audit of reads (memstore/audit/read_log.py: rows appended, never changed)",
    "expire_reads": "reads older than their retention (audit.retain_days or set_retention(\"reads\", ...))",
}


@contextlib.contextmanager
def write_unit(db: Database, operation: str, **options: Any) -> Iterator[Database]:
    """One unit of work named `operation` ("forget:receipt" is the `forget` operation's receipt
    step); `options` go to `Database.transaction` (e.g. `cache_follows=True` for the add family)."""
    if operation.split(":", 1)[0] not in WRITE_OPERATIONS:
        raise ValueError(f"{operation!r} is not a write operation of memstore.store.unit.WRITE_OPERATIONS")
    with db.transaction(operation, **options):
        yield db
