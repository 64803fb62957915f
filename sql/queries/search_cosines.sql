-- Cosine with the query vector for memories whose vectors the scope cache does not hold.
SELECT id, array_cosine_similarity(embedding, $qvec::FLOAT[{dim}]) AS cosine
FROM memories
WHERE list_contains($ids::VARCHAR[], id);
