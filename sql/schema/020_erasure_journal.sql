-- Erasures in progress (see memstore/governance/erasure_journal.py). A row is inserted in the SAME
-- transaction as the scope's deletes and removed in the same transaction as its receipt, so a
-- crash in between leaves it here and the next open finishes the erasure. No personal content:
-- the scope is a keyed hash as in erasure_receipts; what finishing needs in clear (the scope, the
-- strings to scan for) is in a sealed sidecar file `<store>.erasure-<id>`, encrypted under the
-- receipt key, which lives outside this file.
CREATE TABLE IF NOT EXISTS pending_erasures (
    id           VARCHAR PRIMARY KEY,          -- the receipt id it will get
    scope_hash   VARCHAR NOT NULL,
    scope_keys   VARCHAR[] NOT NULL,
    key_id       VARCHAR NOT NULL,
    requested_at TIMESTAMP NOT NULL,
    actor_id     VARCHAR,
    scrub        BOOLEAN NOT NULL,             -- rewrite the file (forget(scrub=True))
    rows_removed JSON NOT NULL,
    untouched    JSON NOT NULL,
    timings_ms   JSON NOT NULL,                -- of the delete step
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   VARCHAR                       -- why the last attempt to finish failed (no content)
);
