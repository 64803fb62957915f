-- Every later occurrence of a stored memory (issue 43): an add whose fact or raw message is the
-- same as a memory already in its scope keeps ONE memory, and records here the message(s) and the
-- metadata it came with, so no source is lost to de-duplication. The memory's first source stays
-- in memories.source_message_ids / memories.metadata; `Memory.get(id)["sources"]` lists both.
CREATE TABLE IF NOT EXISTS memory_sources (
    memory_id         VARCHAR NOT NULL,          -- memories.id of the memory kept
    scope_key         VARCHAR NOT NULL,
    user_id           VARCHAR,
    agent_id          VARCHAR,
    run_id            VARCHAR,
    message_ids       VARCHAR[],                 -- messages.id of this occurrence's message(s)
    metadata          VARCHAR,                   -- the metadata given with this occurrence (JSON text)
    extraction_run_id VARCHAR,                   -- extraction_runs.id of the add that found the duplicate
    created_at        TIMESTAMP NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_sources_memory ON memory_sources (memory_id);
