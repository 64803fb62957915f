DELETE FROM entity_postings p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id);
