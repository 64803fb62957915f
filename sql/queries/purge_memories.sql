-- Physically remove the memories listed in `doomed` (id) and every row naming them, except history.
-- Unlike a delete, a purge changes nothing a reader sees: a fact an expired memory had superseded
-- stays superseded (its validity stays closed; only the pointer to the purged memory is cleared).
-- the entities these memories name: those no other memory names are removed at the end (an
-- entity row keeps a name, e.g. "Maria"; it must not outlive the last memory that mentions it)
CREATE OR REPLACE TEMP TABLE doomed_entities AS
    SELECT DISTINCT entity_id AS id FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM keyword_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_sources WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_links WHERE src_id IN (SELECT id FROM doomed) OR dst_id IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = NULL
    WHERE superseded_by IN (SELECT id FROM doomed) AND id NOT IN (SELECT id FROM doomed);
DELETE FROM memories WHERE id IN (SELECT id FROM doomed);
DELETE FROM entities WHERE id IN (SELECT id FROM doomed_entities)
    AND id NOT IN (SELECT entity_id FROM entity_postings WHERE entity_id IN (SELECT id FROM doomed_entities));
DROP TABLE doomed_entities;
