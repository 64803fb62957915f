-- The later occurrences of one memory (memory_sources), oldest first.
SELECT message_ids, metadata, extraction_run_id, created_at
FROM memory_sources WHERE memory_id = $id
ORDER BY created_at, extraction_run_id;
