DELETE FROM memory_links l
WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.src_id)
   OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.dst_id);
