-- What the server checks a bearer token against (it keeps these in memory, reloaded on change).
SELECT name, token_hash, user_id, agent_id, run_id, read_only, expires_at
FROM api_tokens;
