-- Links between memories of different scopes (one tenant's memory pointing into another's).
SELECT 'memory_links' AS "table", l.src_id || ' -> ' || l.dst_id AS row_id,
       l.kind || ' link across scopes ' || s.scope_key || ' -> ' || d.scope_key AS detail
FROM memory_links l JOIN memories s ON s.id = l.src_id JOIN memories d ON d.id = l.dst_id
WHERE s.scope_key <> d.scope_key;
