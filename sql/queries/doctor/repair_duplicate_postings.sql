-- Keep one row per (entity, memory); all copies carry the same scope once scope_mismatch is fixed.
CREATE OR REPLACE TEMP TABLE doctor_dedup AS
    SELECT DISTINCT ON (entity_id, memory_id) * FROM entity_postings
    WHERE (entity_id, memory_id) IN (SELECT entity_id, memory_id FROM entity_postings
                                     GROUP BY ALL HAVING count(*) > 1);
DELETE FROM entity_postings WHERE (entity_id, memory_id) IN (SELECT entity_id, memory_id FROM doctor_dedup);
INSERT INTO entity_postings SELECT * FROM doctor_dedup;
DROP TABLE doctor_dedup;
