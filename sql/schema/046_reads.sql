-- The audit of reads (memstore/audit/): one row per read that returned memories, when config
-- `audit.reads` is "on" (off by default). Who read (`token_name`: a server token's name, "admin",
-- or NULL for the library in-process), through which door, which method, in which scope, the query
-- (as sent, or its sha256 when `audit.reads_query` is "hash"), what came back (ids and fused
-- scores, best first), which channels the search used, and how long the read took.
-- The identity columns are the read's scope, named the memstore way: forget() of a scope erases
-- its reads with everything else (governance/erase_scope.py finds tables by their columns).
CREATE TABLE IF NOT EXISTS reads (
    id           VARCHAR NOT NULL,       -- a UUID given when the row is written (lake publish's key)
    ts           TIMESTAMP NOT NULL,
    token_name   VARCHAR,
    door         VARCHAR NOT NULL,       -- library | server | front | mcp | langgraph | dashboard | cli
    method       VARCHAR NOT NULL,       -- search | get | get_all | explain_search | frame | sql
    user_id      VARCHAR,
    agent_id     VARCHAR,
    run_id       VARCHAR,
    query        VARCHAR,                -- search text, the frame's name or the SQL (or a sha256)
    query_hashed BOOLEAN NOT NULL DEFAULT false,
    result_ids   VARCHAR[],
    scores       DOUBLE[],               -- fused search scores, aligned with result_ids (NULL: none)
    channels     VARCHAR[],              -- the channels a search used
    n_results    INTEGER NOT NULL,
    ms           DOUBLE NOT NULL
);
