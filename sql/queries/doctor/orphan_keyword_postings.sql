-- Keyword postings naming a memory that does not exist (it would still score in BM25 statistics).
SELECT 'keyword_postings' AS "table", k.memory_id AS row_id, count(*) || ' term(s) of a missing memory' AS detail
FROM keyword_postings k WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = k.memory_id)
GROUP BY k.memory_id;
