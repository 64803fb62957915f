-- Store one erasure receipt (no personal content: the scope is an HMAC, see receipt_key.py).
INSERT INTO erasure_receipts (id, scope_hash, scope_keys, key_id, requested_at, completed_at, actor_id,
                              rows_removed, files_rewritten, method, verified, verification, timings_ms)
VALUES ($id, $scope_hash, $scope_keys, $key_id, $requested_at, $completed_at, $actor_id,
        $rows_removed, $files_rewritten, $method, $verified, $verification, $timings_ms);
