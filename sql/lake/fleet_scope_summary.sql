-- fleet_scope_summary: the store's `scope_summary` over a lake, one row per shard and scope (a user
-- moved between shards has a row on each). The dashboard's Overview reads it (memstore/lake/fleet.py);
-- `fleet_messages` is the lake's `messages` or, when the shards do not publish messages, no rows.
--
--   shard, user_id, agent_id, run_id, scope_key
--   memories, current, superseded, expired, messages, extraction_runs, failed_runs, last_activity
WITH mem AS (
    SELECT shard, scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id,
           count(*)                                                          AS memories,
           count(*) FILTER (WHERE invalidated_at IS NULL
                              AND (expiration_date IS NULL
                                   OR expiration_date > (now() AT TIME ZONE 'UTC')))  AS current,
           count(*) FILTER (WHERE invalidated_at IS NOT NULL)               AS superseded,
           count(*) FILTER (WHERE invalidated_at IS NULL
                              AND expiration_date <= (now() AT TIME ZONE 'UTC'))      AS expired,
           max(created_at)                                                   AS last_at
    FROM memories GROUP BY shard, scope_key
),
msg AS (
    SELECT shard, scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id, count(*) AS messages, max(created_at) AS last_at
    FROM fleet_messages GROUP BY shard, scope_key
),
runs AS (
    SELECT shard, scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id, count(*) AS extraction_runs,
           count(*) FILTER (WHERE status IN ('malformed', 'llm_error')) AS failed_runs
    FROM extraction_runs GROUP BY shard, scope_key
),
mm AS (
    SELECT coalesce(mem.shard, msg.shard) AS shard, coalesce(mem.scope_key, msg.scope_key) AS scope_key,
           coalesce(mem.user_id, msg.user_id) AS user_id, coalesce(mem.agent_id, msg.agent_id) AS agent_id,
           coalesce(mem.run_id, msg.run_id) AS run_id,
           coalesce(mem.memories, 0) AS memories, coalesce(mem.current, 0) AS current,
           coalesce(mem.superseded, 0) AS superseded, coalesce(mem.expired, 0) AS expired,
           coalesce(msg.messages, 0) AS messages, greatest(mem.last_at, msg.last_at) AS last_activity
    FROM mem FULL JOIN msg ON msg.shard = mem.shard AND msg.scope_key = mem.scope_key
)
SELECT coalesce(mm.shard, runs.shard)                 AS shard,
       coalesce(mm.user_id, runs.user_id)             AS user_id,
       coalesce(mm.agent_id, runs.agent_id)           AS agent_id,
       coalesce(mm.run_id, runs.run_id)               AS run_id,
       coalesce(mm.scope_key, runs.scope_key)         AS scope_key,
       coalesce(mm.memories, 0)         AS memories,
       coalesce(mm.current, 0)          AS current,
       coalesce(mm.superseded, 0)       AS superseded,
       coalesce(mm.expired, 0)          AS expired,
       coalesce(mm.messages, 0)         AS messages,
       coalesce(runs.extraction_runs, 0) AS extraction_runs,
       coalesce(runs.failed_runs, 0)    AS failed_runs,
       mm.last_activity                 AS last_activity
FROM mm FULL JOIN runs ON runs.shard = mm.shard AND runs.scope_key = mm.scope_key
