-- Close the validity of superseded memories (same scope, still current). Returns what was closed.
UPDATE memories
SET invalidated_at = $at, superseded_by = $new_id, updated_at = $now
WHERE id IN (SELECT unnest($ids)) AND scope_key = $scope_key AND invalidated_at IS NULL
RETURNING id, memory;
