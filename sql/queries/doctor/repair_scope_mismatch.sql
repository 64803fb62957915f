-- The memory's identity is the truth: copy it onto its postings and links.
UPDATE entity_postings p SET scope_key = m.scope_key, user_id = m.user_id, agent_id = m.agent_id, run_id = m.run_id
FROM memories m WHERE m.id = p.memory_id
  AND (p.scope_key IS DISTINCT FROM m.scope_key OR p.user_id IS DISTINCT FROM m.user_id
       OR p.agent_id IS DISTINCT FROM m.agent_id OR p.run_id IS DISTINCT FROM m.run_id);
UPDATE keyword_postings k SET scope_key = m.scope_key, user_id = m.user_id, agent_id = m.agent_id, run_id = m.run_id
FROM memories m WHERE m.id = k.memory_id
  AND (k.scope_key IS DISTINCT FROM m.scope_key OR k.user_id IS DISTINCT FROM m.user_id
       OR k.agent_id IS DISTINCT FROM m.agent_id OR k.run_id IS DISTINCT FROM m.run_id);
UPDATE memory_links l SET scope_key = m.scope_key, user_id = m.user_id, agent_id = m.agent_id, run_id = m.run_id
FROM memories m WHERE m.id = l.src_id
  AND (l.scope_key IS DISTINCT FROM m.scope_key OR l.user_id IS DISTINCT FROM m.user_id
       OR l.agent_id IS DISTINCT FROM m.agent_id OR l.run_id IS DISTINCT FROM m.run_id);
