-- Erasure: entities no remaining posting names — the ones only the erased scope used (shared ones
-- stay) and any left orphaned by earlier deletes (their names are personal data too).
-- Returns what was removed.
DELETE FROM entities
WHERE id NOT IN (SELECT entity_id FROM entity_postings)
RETURNING id, name;
