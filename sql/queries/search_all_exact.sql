-- The exact cross-scope scan (ground truth for the HNSW recall figure).
SELECT m.* EXCLUDE (embedding), array_cosine_similarity(m.embedding, q.embedding) AS score
FROM memories m, qvec q
WHERE /*WHERE*/
ORDER BY score DESC
LIMIT $limit;
