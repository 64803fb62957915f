-- Entities no memory names any more (degree 0): left behind by a delete.
SELECT 'entities' AS "table", e.id AS row_id, 'entity with no postings (' || coalesce(e.label, 'no label') || ')' AS detail
FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_postings p WHERE p.entity_id = e.id);
