-- Keyword postings of the query's terms in the search's identity scope (/*POSTING_SCOPE*/, alias p);
-- rows outside the filtered scope are dropped in memory (memstore/retrieval/candidates.py).
SELECT p.memory_id, p.term, p.tf
FROM keyword_postings p
WHERE /*POSTING_SCOPE*/ AND list_contains($qterms::VARCHAR[], p.term);
