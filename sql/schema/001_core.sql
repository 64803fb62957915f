-- memstore core schema. Every projection of a memory lives here, so one write is one transaction.
-- {dim} is replaced by the embedder's dimension when the store is created (an integer, never user input).

CREATE TABLE IF NOT EXISTS store_meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);

-- memories and entities carry no PRIMARY KEY on purpose: an ART index on a table with a FLOAT[dim]
-- column made every COMMIT cost 5-8 ms (measured, bench/write_path.py); ids are UUIDs / content
-- hashes minted by memstore, and the write path checks entity existence itself.
CREATE TABLE IF NOT EXISTS memories (
    id                 VARCHAR NOT NULL,
    memory             VARCHAR NOT NULL,
    hash               VARCHAR NOT NULL,          -- md5 of the normalised text; unique per scope (enforced on write)
    embedding          FLOAT[{dim}] NOT NULL,
    user_id            VARCHAR,
    agent_id           VARCHAR,
    run_id             VARCHAR,
    actor_id           VARCHAR,
    scope_key          VARCHAR NOT NULL,          -- canonical (user_id, agent_id, run_id) triple
    role               VARCHAR,
    attributed_to      VARCHAR,
    metadata           JSON,
    doc_len            INTEGER NOT NULL DEFAULT 0, -- number of keyword terms, for BM25
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP,
    expiration_date    TIMESTAMP,
    valid_from         TIMESTAMP,
    invalidated_at     TIMESTAMP,
    superseded_by      VARCHAR,
    source_message_ids VARCHAR[],
    extraction_run_id  VARCHAR
);

CREATE TABLE IF NOT EXISTS entities (
    id         VARCHAR NOT NULL,                  -- md5 of the normalised name
    name       VARCHAR NOT NULL,
    norm       VARCHAR NOT NULL,
    label      VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS entity_postings (
    entity_id VARCHAR NOT NULL,
    memory_id VARCHAR NOT NULL,
    scope_key VARCHAR NOT NULL,
    user_id   VARCHAR,
    agent_id  VARCHAR,
    run_id    VARCHAR
);

CREATE TABLE IF NOT EXISTS keyword_postings (
    memory_id VARCHAR NOT NULL,
    scope_key VARCHAR NOT NULL,
    user_id   VARCHAR,
    agent_id  VARCHAR,
    run_id    VARCHAR,
    term      VARCHAR NOT NULL,
    tf        INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS memory_links (
    src_id     VARCHAR NOT NULL,
    dst_id     VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,                  -- related | supersedes
    scope_key  VARCHAR NOT NULL,
    user_id    VARCHAR,
    agent_id   VARCHAR,
    run_id     VARCHAR,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS history (
    id         VARCHAR PRIMARY KEY,
    memory_id  VARCHAR NOT NULL,
    event      VARCHAR NOT NULL,                  -- ADD | UPDATE | DELETE | SUPERSEDE | EXPIRE | RESOLVE
    old_memory VARCHAR,
    new_memory VARCHAR,
    user_id    VARCHAR,
    agent_id   VARCHAR,
    run_id     VARCHAR,
    scope_key  VARCHAR,
    actor_id   VARCHAR,
    role       VARCHAR,
    created_at TIMESTAMP NOT NULL,
    is_deleted BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS messages (
    id                VARCHAR PRIMARY KEY,
    scope_key         VARCHAR NOT NULL,
    user_id           VARCHAR,
    agent_id          VARCHAR,
    run_id            VARCHAR,
    role              VARCHAR NOT NULL,
    name              VARCHAR,
    content           VARCHAR NOT NULL,
    created_at        TIMESTAMP NOT NULL,
    source_file       VARCHAR,
    source_conversation VARCHAR,
    source_message_id VARCHAR
);

CREATE TABLE IF NOT EXISTS extraction_runs (
    id                VARCHAR PRIMARY KEY,
    scope_key         VARCHAR NOT NULL,
    user_id           VARCHAR,
    agent_id          VARCHAR,
    run_id            VARCHAR,
    extractor         VARCHAR NOT NULL,           -- llm | heuristic | none
    model             VARCHAR,
    prompt_version    VARCHAR,
    input_message_ids VARCHAR[],
    status            VARCHAR NOT NULL,           -- ok | empty | malformed | llm_error
    n_facts           INTEGER NOT NULL DEFAULT 0,
    n_added           INTEGER NOT NULL DEFAULT 0,
    n_deduplicated    INTEGER NOT NULL DEFAULT 0,
    n_linked          INTEGER NOT NULL DEFAULT 0,
    facts             JSON,                       -- what the extractor returned and what happened to each fact
    error             VARCHAR,
    latency_ms        DOUBLE,
    created_at        TIMESTAMP NOT NULL
);
