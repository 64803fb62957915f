-- Current (not superseded, unexpired) memories of one scope stating any of the subject|slot keys.
SELECT id, subject || '|' || slot AS key, coalesce(valid_from, created_at) AS valid_from
FROM memories
WHERE scope_key = $scope_key AND invalidated_at IS NULL
  AND (expiration_date IS NULL OR expiration_date > $now)
  AND list_contains($keys, subject || '|' || slot);
