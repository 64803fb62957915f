-- Current (not superseded, unexpired) memories of one scope holding any of the subject|slot keys
-- (a fact that ends a slot, slot_value NULL, holds nothing: it stays true).
SELECT id, subject || '|' || slot AS key, coalesce(valid_from, created_at) AS valid_from
FROM memories
WHERE scope_key = $scope_key AND invalidated_at IS NULL
  AND (expiration_date IS NULL OR expiration_date > $now)
  AND slot_value IS NOT NULL
  AND list_contains($keys, subject || '|' || slot);
