-- Stored memories of the scope with any of the given content hashes (whole scope, not top-N).
SELECT hash, id FROM memories
WHERE scope_key = $scope_key AND hash IN (SELECT unnest($hashes)) AND invalidated_at IS NULL;
