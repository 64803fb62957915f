-- Current memories of one scope most similar to the query vector in `qvec` (exact scan).
SELECT m.id, m.memory, array_cosine_similarity(m.embedding, q.embedding) AS sim
FROM memories m, qvec q
WHERE m.scope_key = $scope_key AND m.invalidated_at IS NULL
ORDER BY sim DESC
LIMIT $n;
