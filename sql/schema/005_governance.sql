-- Governance: erasure receipts and retention policies.

-- One row per `forget`. No personal content: the erased scope is kept only as an HMAC-SHA256
-- under a per-store key that lives OUTSIDE this file (see memstore/governance/receipt_key.py), so a
-- copy of the database alone cannot tell whom a receipt is about, while the key holder can.
CREATE TABLE IF NOT EXISTS erasure_receipts (
    id              VARCHAR PRIMARY KEY,
    scope_hash      VARCHAR NOT NULL,          -- hex HMAC-SHA256(key, canonical scope)
    scope_keys      VARCHAR[] NOT NULL,        -- which identity keys were given, e.g. ['user_id']
    key_id          VARCHAR NOT NULL,          -- fingerprint of the key that made scope_hash
    requested_at    TIMESTAMP NOT NULL,
    completed_at    TIMESTAMP NOT NULL,
    actor_id        VARCHAR,
    rows_removed    JSON NOT NULL,             -- {"memories": 12, "history": 30, ...}
    files_rewritten JSON NOT NULL,             -- [{"path", "table", "rows_removed", "action", "sha256"}]
    method          VARCHAR NOT NULL,          -- rewrite | in_memory | skipped
    verified        BOOLEAN NOT NULL,          -- byte scan found no needle in any scanned file
    verification    JSON NOT NULL,             -- needle counts, files scanned, hits per file
    timings_ms      JSON NOT NULL              -- delete / exports / rewrite / verify
);

-- Retention: how long messages and history text are kept. Identity columns NULL = any, so a row
-- with all three NULL is the global default; the most specific matching row wins for each record.
-- retain_days NULL = keep forever (lets one scope opt out of a global policy).
CREATE TABLE IF NOT EXISTS retention_policies (
    id          VARCHAR PRIMARY KEY,           -- target + canonical scope, so `set` replaces
    target      VARCHAR NOT NULL,              -- messages | history_text
    user_id     VARCHAR,
    agent_id    VARCHAR,
    run_id      VARCHAR,
    retain_days INTEGER,
    updated_at  TIMESTAMP NOT NULL
);
