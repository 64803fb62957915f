-- Memories matching compiled filters (/*WHERE*/ is replaced by a sqlglot-built condition).
SELECT m.* EXCLUDE (embedding)
FROM memories m
WHERE /*WHERE*/
ORDER BY m.created_at DESC, m.id
LIMIT $limit;
