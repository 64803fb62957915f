-- Identity and validity of the given memories (truth maintenance decides on these).
SELECT id, memory, user_id, agent_id, run_id, scope_key, coalesce(valid_from, created_at) AS valid_from,
       invalidated_at, superseded_by, expiration_date
FROM memories WHERE id IN (SELECT unnest($ids));
