-- Delete memories listed in `doomed` (id) and every row that names them, except history.
-- Run inside one transaction. A fact that a deleted memory had superseded becomes current again.
-- the entities these memories name: those no other memory names are removed at the end (an
-- entity row keeps a name, e.g. "Maria"; it must not outlive the last memory that mentions it)
CREATE OR REPLACE TEMP TABLE doomed_entities AS
    SELECT DISTINCT entity_id AS id FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM keyword_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_links WHERE src_id IN (SELECT id FROM doomed) OR dst_id IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = NULL, invalidated_at = NULL
    WHERE superseded_by IN (SELECT id FROM doomed) AND id NOT IN (SELECT id FROM doomed);
DELETE FROM memories WHERE id IN (SELECT id FROM doomed);
DELETE FROM entities WHERE id IN (SELECT id FROM doomed_entities)
    AND id NOT IN (SELECT entity_id FROM entity_postings WHERE entity_id IN (SELECT id FROM doomed_entities));
DROP TABLE doomed_entities;
