-- Retention policies, global first, then by scope.
SELECT target, user_id, agent_id, run_id, retain_days, updated_at
FROM retention_policies
ORDER BY target, (user_id IS NOT NULL)::INT + (agent_id IS NOT NULL)::INT + (run_id IS NOT NULL)::INT,
         user_id NULLS FIRST, agent_id NULLS FIRST, run_id NULLS FIRST;
