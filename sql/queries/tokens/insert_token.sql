-- A new token (the caller checked the name is free; the PRIMARY KEY refuses a race).
INSERT INTO api_tokens (name, token_hash, user_id, agent_id, run_id, read_only, created_at, expires_at)
VALUES ($name, $token_hash, $user_id, $agent_id, $run_id, $read_only, $created_at, $expires_at);
