-- Current, unexpired memories of the scope with any of the given content hashes (whole scope, not
-- top-N). An expired memory is hidden from reads, so restating it must store it again.
-- list_contains (not IN (SELECT unnest(...))) keeps it a filter on the scan instead of a semi-join.
SELECT hash, id FROM memories
WHERE scope_key = $scope_key AND list_contains($hashes, hash) AND invalidated_at IS NULL
  AND (expiration_date IS NULL OR expiration_date > $now);
