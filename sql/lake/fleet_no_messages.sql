-- fleet_no_messages: the shards do not publish messages (`publish --tables ... messages` is
-- opt-in): fleet_messages has their columns and no rows.
CREATE OR REPLACE TEMP VIEW fleet_messages AS
SELECT CAST(NULL AS VARCHAR) AS shard, CAST(NULL AS VARCHAR) AS scope_key, CAST(NULL AS VARCHAR) AS user_id,
       CAST(NULL AS VARCHAR) AS agent_id, CAST(NULL AS VARCHAR) AS run_id, CAST(NULL AS TIMESTAMP) AS created_at
WHERE false
