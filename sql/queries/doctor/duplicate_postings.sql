-- The same (entity, memory) posted twice: the entity's degree (count of postings) would be wrong.
SELECT 'entity_postings' AS "table", memory_id AS row_id,
       'entity ' || entity_id || ' posted ' || count(*) || ' times' AS detail
FROM entity_postings GROUP BY entity_id, memory_id HAVING count(*) > 1;
