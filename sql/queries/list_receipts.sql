-- Erasure receipts, newest first; $scope_hash NULL = all of them.
SELECT id, scope_hash, scope_keys, key_id, requested_at, completed_at, actor_id, rows_removed,
       files_rewritten, method, verified, verification, timings_ms
FROM erasure_receipts
WHERE $scope_hash IS NULL OR scope_hash = $scope_hash
ORDER BY completed_at DESC, id;
