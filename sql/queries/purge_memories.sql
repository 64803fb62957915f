-- Physically remove the memories listed in `doomed` (id) and every row naming them, except history.
-- Unlike a delete, a purge changes nothing a reader sees: a fact an expired memory had superseded
-- stays superseded (its validity stays closed; only the pointer to the purged memory is cleared).
DELETE FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM keyword_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_links WHERE src_id IN (SELECT id FROM doomed) OR dst_id IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = NULL
    WHERE superseded_by IN (SELECT id FROM doomed) AND id NOT IN (SELECT id FROM doomed);
DELETE FROM memories WHERE id IN (SELECT id FROM doomed);
