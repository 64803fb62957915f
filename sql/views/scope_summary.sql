-- scope_summary: one row per scope (identity triple) that has memories, messages or extraction
-- runs, with counts — an aggregate, so listing the scopes of a 1,000-user store stays cheap.
--
--   user_id, agent_id, run_id, scope_key
--   memories, current, superseded, expired   memories by status (now, in UTC; as in `timeline`)
--   messages                                 stored messages
--   extraction_runs, failed_runs             runs, and of those the malformed / llm_error ones
--   last_activity                            newest created_at of its memories and messages
--
-- The biggest scopes:
--   SELECT user_id, memories, messages FROM scope_summary ORDER BY memories DESC LIMIT 10
WITH mem AS (
    SELECT scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id,
           count(*)                                                          AS memories,
           count(*) FILTER (WHERE invalidated_at IS NULL
                              AND (expiration_date IS NULL
                                   OR expiration_date > (now() AT TIME ZONE 'UTC')))  AS current,
           count(*) FILTER (WHERE invalidated_at IS NOT NULL)               AS superseded,
           count(*) FILTER (WHERE invalidated_at IS NULL
                              AND expiration_date <= (now() AT TIME ZONE 'UTC'))      AS expired,
           max(created_at)                                                   AS last_at
    FROM memories GROUP BY scope_key
),
msg AS (
    SELECT scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id, count(*) AS messages, max(created_at) AS last_at
    FROM messages GROUP BY scope_key
),
runs AS (
    SELECT scope_key, any_value(user_id) AS user_id, any_value(agent_id) AS agent_id,
           any_value(run_id) AS run_id, count(*) AS extraction_runs,
           count(*) FILTER (WHERE status IN ('malformed', 'llm_error')) AS failed_runs
    FROM extraction_runs GROUP BY scope_key
)
SELECT coalesce(mem.user_id, msg.user_id, runs.user_id)      AS user_id,
       coalesce(mem.agent_id, msg.agent_id, runs.agent_id)   AS agent_id,
       coalesce(mem.run_id, msg.run_id, runs.run_id)         AS run_id,
       coalesce(mem.scope_key, msg.scope_key, runs.scope_key) AS scope_key,
       coalesce(mem.memories, 0)        AS memories,
       coalesce(mem.current, 0)         AS current,
       coalesce(mem.superseded, 0)      AS superseded,
       coalesce(mem.expired, 0)         AS expired,
       coalesce(msg.messages, 0)        AS messages,
       coalesce(runs.extraction_runs, 0) AS extraction_runs,
       coalesce(runs.failed_runs, 0)    AS failed_runs,
       greatest(mem.last_at, msg.last_at) AS last_activity
FROM mem
FULL JOIN msg ON msg.scope_key = mem.scope_key
FULL JOIN runs ON runs.scope_key = coalesce(mem.scope_key, msg.scope_key);
