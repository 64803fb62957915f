-- Entity postings naming an entity that does not exist.
SELECT 'entity_postings' AS "table", p.memory_id AS row_id, 'posting names missing entity ' || p.entity_id AS detail
FROM entity_postings p WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = p.entity_id);
