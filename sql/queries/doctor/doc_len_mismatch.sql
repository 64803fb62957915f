-- memories.doc_len (BM25 length normalisation) disagrees with the sum of its keyword postings.
SELECT 'memories' AS "table", m.id AS row_id,
       'doc_len ' || m.doc_len || ' but postings sum to ' || coalesce(k.n, 0) AS detail
FROM memories m LEFT JOIN (SELECT memory_id, sum(tf) AS n FROM keyword_postings GROUP BY memory_id) k
  ON k.memory_id = m.id
WHERE m.doc_len <> coalesce(k.n, 0);
