-- An updated memory's keyword postings (rebuilt from its new text in the same transaction).
DELETE FROM keyword_postings WHERE memory_id = $id;
