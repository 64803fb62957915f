-- The rows of the nearest neighbours that pass the compiled filter (/*WHERE*/, alias m).
SELECT m.* EXCLUDE (embedding) FROM memories m
WHERE m.id IN (SELECT unnest($ids)) AND /*WHERE*/;
