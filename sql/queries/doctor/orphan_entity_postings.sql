-- Entity postings naming a memory that does not exist (a delete that missed them).
SELECT 'entity_postings' AS "table", p.memory_id AS row_id, 'entity ' || p.entity_id || ' posted on a missing memory' AS detail
FROM entity_postings p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id);
