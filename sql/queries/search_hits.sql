-- Postings of the query's keyword terms (kind 0) and of the entities it may name (kind 1) in the
-- search's identity scope (/*POSTING_SCOPE*/ on alias p, /*POSTING_SCOPE_E*/ on alias e); rows
-- outside the filtered scope are dropped in memory (memstore/retrieval/candidates.py). One statement
-- for both: each statement costs ~0.5 ms before it reads anything.
SELECT 0 AS kind, p.memory_id, p.term AS key, p.tf
FROM keyword_postings p
WHERE /*POSTING_SCOPE*/ AND list_contains($qterms::VARCHAR[], p.term)
UNION ALL
SELECT 1 AS kind, e.memory_id, e.entity_id AS key, 1 AS tf
FROM entity_postings e
WHERE /*POSTING_SCOPE_E*/ AND list_contains($qent_ids::VARCHAR[], e.entity_id);
