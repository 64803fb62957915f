-- Text a scope wrote (memories, metadata, messages, history, extraction facts): erasure picks its
-- distinctive strings from here to look for them in the raw bytes afterwards. Identity NULL = any.
WITH m AS (
    SELECT memory, CAST(metadata AS VARCHAR) AS meta FROM memories
    WHERE ($user_id IS NULL OR user_id = $user_id) AND ($agent_id IS NULL OR agent_id = $agent_id)
      AND ($run_id IS NULL OR run_id = $run_id)
)
SELECT memory AS text FROM m
UNION ALL SELECT meta FROM m
UNION ALL SELECT content FROM messages
    WHERE ($user_id IS NULL OR user_id = $user_id) AND ($agent_id IS NULL OR agent_id = $agent_id)
      AND ($run_id IS NULL OR run_id = $run_id)
UNION ALL SELECT concat_ws(' ', old_memory, new_memory) FROM history
    WHERE ($user_id IS NULL OR user_id = $user_id) AND ($agent_id IS NULL OR agent_id = $agent_id)
      AND ($run_id IS NULL OR run_id = $run_id)
UNION ALL SELECT query FROM reads      -- the audit of reads: the queries asked about the scope
    WHERE NOT query_hashed AND ($user_id IS NULL OR user_id = $user_id)
      AND ($agent_id IS NULL OR agent_id = $agent_id) AND ($run_id IS NULL OR run_id = $run_id);
