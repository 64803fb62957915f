-- Every keyword posting (kind 0) and entity posting (kind 1) of a search's identity scope
-- (/*POSTING_SCOPE*/ on alias p, /*POSTING_SCOPE_E*/ on alias e), for the search snapshot: a hot
-- scope's later searches find their query's postings in memory.
SELECT 0 AS kind, p.memory_id, p.term AS key, p.tf
FROM keyword_postings p
WHERE /*POSTING_SCOPE*/
UNION ALL
SELECT 1 AS kind, e.memory_id, e.entity_id AS key, 1 AS tf
FROM entity_postings e
WHERE /*POSTING_SCOPE_E*/;
