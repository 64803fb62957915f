-- For each new fact in `new_facts` (idx, embedding), its 3 most similar current, unexpired memories
-- in the scope, most similar first (the caller skips a match of opposite polarity).
SELECT n.idx, m.id, array_cosine_similarity(m.embedding, n.embedding) AS sim, m.memory
FROM new_facts n
JOIN memories m ON m.scope_key = $scope_key AND m.invalidated_at IS NULL
               AND (m.expiration_date IS NULL OR m.expiration_date > $now)
QUALIFY row_number() OVER (PARTITION BY n.idx ORDER BY sim DESC) <= 3
ORDER BY n.idx, sim DESC;
