INSERT OR REPLACE INTO retention_policies (id, target, user_id, agent_id, run_id, retain_days, updated_at)
VALUES ($id, $target, $user_id, $agent_id, $run_id, $retain_days, $updated_at);
