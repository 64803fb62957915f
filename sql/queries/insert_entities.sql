-- Add entities not seen before (entities are shared across scopes; postings carry the scope).
-- The new entities come as parallel list parameters (one statement, no registered table).
INSERT INTO entities (id, name, norm, label, created_at)
SELECT n.id, n.name, n.norm, n.label, $created_at::TIMESTAMP
FROM (SELECT unnest($ids::VARCHAR[]) AS id, unnest($names::VARCHAR[]) AS name,
             unnest($norms::VARCHAR[]) AS norm, unnest($labels::VARCHAR[]) AS label) n
WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = n.id);
