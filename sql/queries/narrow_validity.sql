-- A late fact lands inside the closed interval of older facts on its slot: they now end where
-- it begins and it is what superseded them. Returns what was narrowed.
UPDATE memories
SET invalidated_at = $at, superseded_by = $new_id, updated_at = $now
WHERE id IN (SELECT unnest($ids)) AND scope_key = $scope_key AND invalidated_at > $at
RETURNING id, memory;
