-- Memories with no identity at all: no scoped read can ever see them, and no forget can find them.
SELECT 'memories' AS "table", id AS row_id, 'no user_id, agent_id or run_id' AS detail
FROM memories WHERE user_id IS NULL AND agent_id IS NULL AND run_id IS NULL;
