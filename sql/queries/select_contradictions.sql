-- Contradiction candidates of one scope (/*WHERE*/ = compiled identity filters on alias v).
SELECT v.* FROM contradictions v
WHERE /*WHERE*/
ORDER BY v.kind DESC, v.subject NULLS LAST, v.slot NULLS LAST, v.newer_valid_from DESC, v.older_id, v.newer_id;
