DELETE FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_postings p WHERE p.entity_id = e.id);
