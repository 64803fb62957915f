SELECT * EXCLUDE (embedding) FROM memories WHERE id = $id;
