-- no_messages: the shards publish no messages (`publish --tables ... messages` is opt-in), so the
-- lake has no `messages` table; this empty view has the columns the store's views read from it
-- (`scope_summary` counts messages per scope), so they work over such a lake, with no messages.
CREATE OR REPLACE TEMP VIEW messages AS
SELECT CAST(NULL AS VARCHAR) AS shard, CAST(NULL AS VARCHAR) AS id, CAST(NULL AS VARCHAR) AS scope_key,
       CAST(NULL AS VARCHAR) AS user_id, CAST(NULL AS VARCHAR) AS agent_id, CAST(NULL AS VARCHAR) AS run_id,
       CAST(NULL AS VARCHAR) AS role, CAST(NULL AS VARCHAR) AS content, CAST(NULL AS TIMESTAMP) AS created_at
WHERE false
