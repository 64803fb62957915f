-- Text of memories whose embedding is all zeros or not finite (to re-embed them).
SELECT id, memory FROM memories
WHERE array_inner_product(embedding, embedding)::DOUBLE = 0
   OR isnan(array_inner_product(embedding, embedding)::DOUBLE)
   OR isinf(array_inner_product(embedding, embedding)::DOUBLE);
