-- Entities with one id are one normalised name: keep the oldest row. Duplicate memory ids are not
-- repaired (which copy is right is a person's decision).
CREATE OR REPLACE TEMP TABLE doctor_entities AS
    SELECT DISTINCT ON (id) * FROM entities
    WHERE id IN (SELECT id FROM entities GROUP BY id HAVING count(*) > 1)
    ORDER BY id, created_at, name;
DELETE FROM entities WHERE id IN (SELECT id FROM doctor_entities);
INSERT INTO entities BY NAME SELECT * FROM doctor_entities;
DROP TABLE doctor_entities;
