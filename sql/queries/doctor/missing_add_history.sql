-- Memories without an ADD event in history (history is on): their origin is not auditable.
SELECT 'memories' AS "table", m.id AS row_id, 'no ADD event in history' AS detail
FROM memories m WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.event = 'ADD');
