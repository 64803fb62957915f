-- Analyst search across every scope on the HNSW index: the nearest neighbours' ids and distances.
-- /*QVEC*/ is the query vector as a FLOAT[dim] literal and /*FETCH*/ an integer literal: DuckDB's
-- HNSW optimizer only rewrites ORDER BY distance(column, constant) LIMIT <constant>, and only when
-- the distance is selected as such (an expression over it, like 1 - distance, disables the index).
SELECT id, array_cosine_distance(embedding, /*QVEC*/) AS distance
FROM memories
ORDER BY distance
LIMIT /*FETCH*/;
