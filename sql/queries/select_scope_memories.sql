-- ids and texts of every memory whose identity columns equal the given ones (NULL = any).
SELECT id, memory, user_id, agent_id, run_id, scope_key FROM memories
WHERE ($user_id IS NULL OR user_id = $user_id)
  AND ($agent_id IS NULL OR agent_id = $agent_id)
  AND ($run_id IS NULL OR run_id = $run_id);
