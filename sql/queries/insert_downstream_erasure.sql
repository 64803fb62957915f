-- Journal an erasure for a downstream copy (same transaction as forget()'s deletes).
INSERT INTO downstream_erasures (id, erasure_id, target, scope_hash, requested_at, status)
VALUES ($id, $erasure_id, $target, $scope_hash, $requested_at, 'pending');
