-- Memories whose expiration_date has passed, optionally limited to identity columns (NULL = any).
SELECT id, memory, user_id, agent_id, run_id, scope_key FROM memories
WHERE expiration_date IS NOT NULL AND expiration_date <= $now
  AND ($user_id IS NULL OR user_id = $user_id)
  AND ($agent_id IS NULL OR agent_id = $agent_id)
  AND ($run_id IS NULL OR run_id = $run_id)
ORDER BY expiration_date, id;
