-- Journal an erasure (same transaction as its deletes; see sql/schema/020_erasure_journal.sql).
INSERT INTO pending_erasures (id, scope_hash, scope_keys, key_id, requested_at, actor_id, scrub, rows_removed,
                              untouched, timings_ms)
VALUES ($id, $scope_hash, $scope_keys, $key_id, $requested_at, $actor_id, $scrub, $rows_removed, $untouched,
        $timings_ms);
