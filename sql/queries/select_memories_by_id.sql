SELECT id, memory, user_id, agent_id, run_id, scope_key FROM memories WHERE id IN (SELECT unnest($ids));
