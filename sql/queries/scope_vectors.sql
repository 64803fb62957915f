-- Current, unexpired memories of one scope with their vectors, for de-duplication (streamed as
-- Arrow batches; the similarity runs in NumPy: a cross join + window here costs twice the scan).
SELECT id, hash, memory, embedding FROM memories m
WHERE m.scope_key = $scope_key AND m.invalidated_at IS NULL
  AND (m.expiration_date IS NULL OR m.expiration_date > $now);
