-- One scope's current (not superseded) memories for the in-process scope cache (store/scope_cache.py).
-- Expired rows come too: the cache hides them by the caller's `now`, as the queries do.
SELECT scope_key, id, hash, memory, embedding, expiration_date,
       CASE WHEN slot_value IS NOT NULL THEN subject || '|' || slot END AS slot_key,   -- the slot it holds
       coalesce(valid_from, created_at) AS slot_from,
       valid_from                       -- what a supersede closes from (core/rules/supersession.py)
FROM memories
WHERE scope_key = $scope_key AND invalidated_at IS NULL;
