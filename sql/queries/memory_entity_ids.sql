-- The entities one memory is posted under (before an update replaces its postings).
SELECT DISTINCT entity_id FROM entity_postings WHERE memory_id = $id;
