-- Memories superseded by a memory that does not exist: they are hidden from reads for nothing.
SELECT 'memories' AS "table", m.id AS row_id, 'superseded_by ' || m.superseded_by || ' does not exist' AS detail
FROM memories m
WHERE m.superseded_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories s WHERE s.id = m.superseded_by);
