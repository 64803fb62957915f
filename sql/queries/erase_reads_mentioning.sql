-- The audit of reads: analyst reads of no scope (frame, sql) whose query names a value of the scope
-- being erased (e.g. `... WHERE user_id = 'alice'`): forget() erases them with the scope's own reads.
DELETE FROM reads
WHERE user_id IS NULL AND agent_id IS NULL AND run_id IS NULL AND query IS NOT NULL AND NOT query_hashed
  AND list_has_any(list_transform($values::VARCHAR[], v -> contains(query, v)), [true]);
