-- Postings whose identity differs from their memory's: a search scoped to one user could reach
-- another user's memory through them.
SELECT 'entity_postings' AS "table", p.memory_id AS row_id, 'posting scope ' || p.scope_key || ' != memory scope ' || m.scope_key AS detail
FROM entity_postings p JOIN memories m ON m.id = p.memory_id
WHERE p.scope_key IS DISTINCT FROM m.scope_key OR p.user_id IS DISTINCT FROM m.user_id
   OR p.agent_id IS DISTINCT FROM m.agent_id OR p.run_id IS DISTINCT FROM m.run_id
UNION ALL
SELECT 'keyword_postings', k.memory_id, 'keyword scope ' || any_value(k.scope_key) || ' != memory scope ' || any_value(m.scope_key)
FROM keyword_postings k JOIN memories m ON m.id = k.memory_id
WHERE k.scope_key IS DISTINCT FROM m.scope_key OR k.user_id IS DISTINCT FROM m.user_id
   OR k.agent_id IS DISTINCT FROM m.agent_id OR k.run_id IS DISTINCT FROM m.run_id
GROUP BY k.memory_id
UNION ALL
SELECT 'memory_links', l.src_id || ' -> ' || l.dst_id, 'link scope ' || l.scope_key || ' != memory scope ' || m.scope_key
FROM memory_links l JOIN memories m ON m.id = l.src_id
WHERE l.scope_key IS DISTINCT FROM m.scope_key OR l.user_id IS DISTINCT FROM m.user_id
   OR l.agent_id IS DISTINCT FROM m.agent_id OR l.run_id IS DISTINCT FROM m.run_id;
