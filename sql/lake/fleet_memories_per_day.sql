-- fleet_memories_per_day: the store's `memories_per_day` over a lake (all shards together: a scope
-- on two shards is one line of growth), for the Overview's growth chart.
--
--   user_id, agent_id, run_id, scope_key, day, memories
SELECT any_value(user_id) AS user_id, any_value(agent_id) AS agent_id, any_value(run_id) AS run_id, scope_key,
       CAST(coalesce(valid_from, created_at) AS DATE) AS day,
       count(*) AS memories
FROM memories
GROUP BY scope_key, CAST(coalesce(valid_from, created_at) AS DATE)
