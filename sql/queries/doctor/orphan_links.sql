-- Memory links whose source or target memory does not exist.
SELECT 'memory_links' AS "table", l.src_id || ' -> ' || l.dst_id AS row_id,
       l.kind || ' link to/from a missing memory' AS detail
FROM memory_links l
WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.src_id)
   OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.dst_id);
