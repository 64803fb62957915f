-- Exact cosine scan over the filtered scope (/*WHERE*/ = compiled filters AND visibility).
SELECT m.* EXCLUDE (embedding), array_cosine_similarity(m.embedding, q.embedding) AS score
FROM memories m, qvec q
WHERE /*WHERE*/
ORDER BY score DESC
LIMIT $limit;
