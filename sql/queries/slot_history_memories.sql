-- Every unexpired memory of one scope on one subject|slot key, current or superseded, for placing
-- a late (out-of-order) fact on the slot's timeline.
SELECT id, coalesce(valid_from, created_at) AS valid_from, invalidated_at
FROM memories
WHERE scope_key = $scope_key AND subject || '|' || slot = $key
  AND (expiration_date IS NULL OR expiration_date > $now);
