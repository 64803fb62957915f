-- Bearer tokens that carry a scope (see memstore/governance/api_tokens.py). The token itself is
-- never stored: `token_hash` is the sha256 (hex) of a 256-bit random token, shown once at creation.
-- The identity columns are the token's scope, named the memstore way, so forget() of a scope
-- erases the scope's tokens with everything else. The server's admin token is not here: it is
-- `<store>.server-token` (or $MEMSTORE_TOKEN), as before.
CREATE TABLE IF NOT EXISTS api_tokens (
    name         VARCHAR PRIMARY KEY,          -- what `token revoke` and history's actor_id name
    token_hash   VARCHAR NOT NULL UNIQUE,
    user_id      VARCHAR,
    agent_id     VARCHAR,
    run_id       VARCHAR,
    read_only    BOOLEAN NOT NULL DEFAULT false,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP,                    -- NULL: never
    last_used_at TIMESTAMP                     -- written by the server at most once a minute
);
