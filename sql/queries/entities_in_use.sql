-- Of the given entity ids, those some posting still names.
SELECT DISTINCT entity_id FROM entity_postings WHERE entity_id IN (SELECT unnest($ids));
