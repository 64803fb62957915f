-- Memories whose embedding is all zeros or holds NaN/Inf: cosine similarity is undefined for them,
-- so semantic search and dedupe silently skip them.
SELECT 'memories' AS "table", id AS row_id,
       CASE WHEN isnan(sq) THEN 'embedding holds NaN'
            WHEN isinf(sq) THEN 'embedding holds Inf'
            ELSE 'embedding is all zeros' END AS detail
FROM (SELECT id, array_inner_product(embedding, embedding)::DOUBLE AS sq FROM memories)
WHERE sq = 0 OR isnan(sq) OR isinf(sq);
