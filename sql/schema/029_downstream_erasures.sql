-- Copies of the store kept elsewhere (a DuckLake lake, issue 29) that an erasure must reach too.
-- A row is inserted in the SAME transaction as forget()'s deletes, for each target the store
-- publishes to (store_meta key 'downstream:<target>'), and marked done when the target confirmed
-- the erasure (its verification: file counts and needle hits, no personal content). What finishing
-- needs in clear (the scope, erased entity ids, the strings to scan for) is in a sealed sidecar
-- `<store>.downstream-<id>` under the receipt key, as for pending_erasures.
CREATE TABLE IF NOT EXISTS downstream_erasures (
    id           VARCHAR PRIMARY KEY,
    erasure_id   VARCHAR NOT NULL,             -- erasure_receipts.id / pending_erasures.id
    target       VARCHAR NOT NULL,             -- e.g. 'lake'
    scope_hash   VARCHAR NOT NULL,
    requested_at TIMESTAMP NOT NULL,
    status       VARCHAR NOT NULL,             -- pending | done
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   VARCHAR,                      -- why the last attempt failed (no content)
    finished_at  TIMESTAMP,
    verification JSON                          -- what the target reported when done
);
