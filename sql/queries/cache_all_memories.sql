-- Every scope's current memories at once, ordered by scope (the scope cache's first load when
-- the store is small enough to hold in memory: one scan instead of one per scope).
SELECT scope_key, id, hash, memory, embedding, expiration_date
FROM memories
WHERE invalidated_at IS NULL
ORDER BY scope_key;
