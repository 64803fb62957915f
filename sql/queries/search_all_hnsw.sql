-- Analyst search across every scope on the HNSW index. /*QVEC*/ is the query vector as a FLOAT[dim]
-- literal (the index is only used for a constant vector); /*WHERE*/ is an optional compiled filter
-- applied to an over-fetched candidate list.
SELECT * FROM (
    SELECT m.* EXCLUDE (embedding), 1 - array_cosine_distance(m.embedding, /*QVEC*/) AS score
    FROM memories m
    ORDER BY array_cosine_distance(m.embedding, /*QVEC*/)
    LIMIT $fetch
) m
WHERE /*WHERE*/
ORDER BY score DESC
LIMIT $limit;
