-- Placement keys held by this store (user_id, else agent_id, else run_id), with how many memories
-- and messages each has: what `memstore cluster rebalance` looks at to decide which scopes move.
SELECT coalesce(user_id, agent_id, run_id) AS key,
       CASE WHEN user_id IS NOT NULL THEN 'user_id' WHEN agent_id IS NOT NULL THEN 'agent_id' ELSE 'run_id' END AS kind,
       sum(is_memory)::BIGINT AS memories,
       sum(1 - is_memory)::BIGINT AS messages
FROM (SELECT user_id, agent_id, run_id, 1 AS is_memory FROM memories
      UNION ALL
      SELECT user_id, agent_id, run_id, 0 AS is_memory FROM messages)
WHERE coalesce(user_id, agent_id, run_id) IS NOT NULL
GROUP BY ALL
ORDER BY key
