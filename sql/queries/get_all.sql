-- Memories matching compiled filters (/*WHERE*/ is replaced by a sqlglot-built condition), newest
-- first by when they became true (valid_from: the conversation's time for ingested facts), then by
-- when they were stored.
SELECT m.* EXCLUDE (embedding)
FROM memories m
WHERE /*WHERE*/
ORDER BY coalesce(m.valid_from, m.created_at) DESC, m.created_at DESC, m.id
LIMIT $limit;
