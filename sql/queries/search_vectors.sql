-- Vectors of memories the scope cache does not hold (e.g. written since by another path).
SELECT id, embedding
FROM memories
WHERE list_contains($ids::VARCHAR[], id);
