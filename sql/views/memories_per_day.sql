-- memories_per_day: how many memories of each scope became valid on each day (by valid_from, else
-- created_at, as in `timeline`), for growth charts without reading every memory.
--
--   user_id, agent_id, run_id, scope_key
--   day        the date (UTC) the memories became valid
--   memories   how many
--
-- A store's growth, cumulative:
--   SELECT day, sum(sum(memories)) OVER (ORDER BY day) AS total FROM memories_per_day GROUP BY day ORDER BY day
SELECT any_value(user_id) AS user_id, any_value(agent_id) AS agent_id, any_value(run_id) AS run_id, scope_key,
       CAST(coalesce(valid_from, created_at) AS DATE) AS day,
       count(*) AS memories
FROM memories
GROUP BY scope_key, CAST(coalesce(valid_from, created_at) AS DATE);
