-- Unfinished erasures, oldest first.
SELECT id, scope_hash, scope_keys, key_id, requested_at, actor_id, scrub, rows_removed, untouched, timings_ms,
       attempts, last_error
FROM pending_erasures ORDER BY requested_at, id;
