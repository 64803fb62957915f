DELETE FROM entity_postings p WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = p.entity_id);
