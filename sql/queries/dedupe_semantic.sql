-- For each new fact in `new_facts` (idx, embedding), its most similar current memory in the scope.
SELECT n.idx, m.id, array_cosine_similarity(m.embedding, n.embedding) AS sim
FROM new_facts n
JOIN memories m ON m.scope_key = $scope_key AND m.invalidated_at IS NULL
QUALIFY row_number() OVER (PARTITION BY n.idx ORDER BY sim DESC) = 1;
