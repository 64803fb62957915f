-- Every scope's current memories at once, ordered by scope (the scope cache's first load when
-- the store is small enough to hold in memory: one scan instead of one per scope).
SELECT scope_key, id, hash, memory, embedding, expiration_date,
       CASE WHEN slot_value IS NOT NULL THEN subject || '|' || slot END AS slot_key,   -- the slot it holds
       coalesce(valid_from, created_at) AS slot_from,
       valid_from                       -- what a supersede closes from (core/rules/supersession.py)
FROM memories
WHERE invalidated_at IS NULL
ORDER BY scope_key;
