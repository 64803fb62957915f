-- Batch ingest of chat exports (issue 6): what was ingested, so a re-run adds nothing and a killed
-- run resumes where it stopped.
--
-- ingest_log: one row per stored source message. A conversation's rows are written in the same
-- transaction as its messages, memories and extraction runs, so a row here means "fully stored".
-- The key is the message's identity in its source (not the file path): the same export moved or
-- re-downloaded is recognised, and a conversation that grew since the last export gets only its
-- new messages ingested.
CREATE TABLE IF NOT EXISTS ingest_log (
    scope_key         VARCHAR NOT NULL,
    user_id           VARCHAR,
    agent_id          VARCHAR,
    run_id            VARCHAR,
    source_format     VARCHAR NOT NULL,          -- chatgpt | claude | locomo | jsonl | csv | parquet
    conversation_id   VARCHAR NOT NULL,          -- the source's conversation id (or the file name)
    message_key       VARCHAR NOT NULL,          -- the source's message id, or a hash of role, time and text
    message_id        VARCHAR NOT NULL,          -- messages.id of the stored copy
    extraction_run_id VARCHAR,                   -- extraction_runs.id of the batch it was extracted in
    source_file       VARCHAR,
    ingest_id         VARCHAR NOT NULL,          -- ingest_runs.id
    ingested_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (scope_key, source_format, conversation_id, message_key)
);

-- ingest_runs: one row per `ingest` call; `status` stays 'running' if the process was killed.
CREATE TABLE IF NOT EXISTS ingest_runs (
    id          VARCHAR PRIMARY KEY,
    scope_key   VARCHAR NOT NULL,
    user_id     VARCHAR,
    agent_id    VARCHAR,
    run_id      VARCHAR,
    files       VARCHAR[],
    status      VARCHAR NOT NULL,                -- running | done | done_with_problems | failed
    report      JSON,                            -- IngestReport.to_dict()
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP
);
