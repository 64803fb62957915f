-- Add entities not seen before (entities are shared across scopes; postings carry the scope).
INSERT INTO entities (id, name, norm, label, created_at)
SELECT n.id, n.name, n.norm, n.label, n.created_at FROM new_entities n
WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = n.id);
