-- Timeline of one scope (/*WHERE*/ = compiled identity filters on alias v), oldest fact first.
SELECT v.* FROM timeline v
WHERE /*WHERE*/
ORDER BY v.valid_from, v.created_at, v.id;
