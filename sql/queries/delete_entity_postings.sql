-- An updated memory's entity postings (rebuilt from its new text in the same transaction).
DELETE FROM entity_postings WHERE memory_id = $id;
