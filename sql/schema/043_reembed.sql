-- Re-embedding a store with another model (memstore reembed; memstore/governance/reembed.py).
--
-- reembed_jobs: one row per job; a job that is not `done` is resumed by the next `reembed` to the
-- same embedder. reembed_vectors: the new model's vector of each memory, made batch by batch while
-- the store keeps answering with the old ones, then copied into memories in ONE transaction (with
-- store_meta's embedder) and deleted. `hash` is the memory's text hash when its vector was made: a
-- memory updated since is embedded again. The identity columns and memory_id let forget() erase a
-- scope's rows here too (governance/catalog.py finds them).
CREATE TABLE IF NOT EXISTS reembed_jobs (
    id            VARCHAR PRIMARY KEY,
    embedder_from VARCHAR,
    embedder_to   VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,             -- running | done
    memories      BIGINT NOT NULL DEFAULT 0,    -- vectors swapped in at the end
    started_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP
);

CREATE TABLE IF NOT EXISTS reembed_vectors (
    job_id     VARCHAR NOT NULL,
    memory_id  VARCHAR NOT NULL,
    hash       VARCHAR NOT NULL,
    scope_key  VARCHAR NOT NULL,
    user_id    VARCHAR,
    agent_id   VARCHAR,
    run_id     VARCHAR,
    embedding  FLOAT[{dim}] NOT NULL
);
