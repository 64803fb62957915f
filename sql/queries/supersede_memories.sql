-- Close the validity of superseded memories (same scope, still current). Returns what was closed.
-- A memory is never closed before it began: superseding a fact that is newer than the replacement
-- (out-of-order input, or a person keeping the older fact) leaves it an empty interval.
UPDATE memories
SET invalidated_at = greatest($at, coalesce(valid_from, $at)), superseded_by = $new_id, updated_at = $now
WHERE id IN (SELECT unnest($ids)) AND scope_key = $scope_key AND invalidated_at IS NULL
RETURNING id, memory;
