SELECT * EXCLUDE (embedding) FROM memories WHERE id IN (SELECT unnest($ids));
