-- Every token without its hash, oldest first.
SELECT name, user_id, agent_id, run_id, read_only, created_at, last_used_at, expires_at
FROM api_tokens
ORDER BY created_at, name;
