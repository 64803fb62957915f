-- fleet_messages: the columns of the lake's `messages` that fleet_scope_summary counts.
CREATE OR REPLACE TEMP VIEW fleet_messages AS
SELECT shard, scope_key, user_id, agent_id, run_id, created_at FROM messages
