-- Downstream erasures (pending first, then the newest done ones), oldest request first.
SELECT id, erasure_id, target, scope_hash, requested_at, status, attempts, last_error, finished_at, verification
FROM downstream_erasures ORDER BY status = 'done', requested_at, id;
