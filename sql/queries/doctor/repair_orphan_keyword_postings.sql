DELETE FROM keyword_postings k WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = k.memory_id);
