DELETE FROM memory_links l
WHERE (SELECT scope_key FROM memories WHERE id = l.src_id) <> (SELECT scope_key FROM memories WHERE id = l.dst_id);
