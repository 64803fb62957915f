-- The result rows of a search on a large store: read by id within the identity scope
-- (/*POSTING_SCOPE*/ on alias m), after fusion, instead of every scope row's columns in the scan.
SELECT m.* EXCLUDE (embedding)
FROM memories m
WHERE /*POSTING_SCOPE*/ AND list_contains($ids::VARCHAR[], m.id);
