-- Context for many LLM batches at once: for each probe vector in `qvecs` (idx, embedding), the $n
-- current memories of the scope most similar to it (exact scan; add() reads the same from the in-process scope cache).
SELECT q.idx, m.id, m.memory
FROM qvecs q
JOIN memories m ON m.scope_key = $scope_key AND m.invalidated_at IS NULL
QUALIFY row_number() OVER (PARTITION BY q.idx ORDER BY array_cosine_similarity(m.embedding, q.embedding) DESC) <= $n
ORDER BY q.idx, array_cosine_similarity(m.embedding, q.embedding) DESC;
