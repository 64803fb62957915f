-- Delete memories listed in `doomed` (id) and every row that names them, except history.
-- Run inside one transaction. A fact that a deleted memory had superseded becomes current again.
DELETE FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM keyword_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_links WHERE src_id IN (SELECT id FROM doomed) OR dst_id IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = NULL, invalidated_at = NULL
    WHERE superseded_by IN (SELECT id FROM doomed) AND id NOT IN (SELECT id FROM doomed);
DELETE FROM memories WHERE id IN (SELECT id FROM doomed);
