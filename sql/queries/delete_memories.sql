-- Delete memories listed in `doomed` (id) and every row that names them, except history.
-- Run inside one transaction.
-- the entities these memories name: those no other memory names are removed at the end (an
-- entity row keeps a name, e.g. "Maria"; it must not outlive the last memory that mentions it)
CREATE OR REPLACE TEMP TABLE doomed_entities AS
    SELECT DISTINCT entity_id AS id FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM entity_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM keyword_postings WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_sources WHERE memory_id IN (SELECT id FROM doomed);
DELETE FROM memory_links WHERE src_id IN (SELECT id FROM doomed) OR dst_id IN (SELECT id FROM doomed);
-- A fact a deleted memory had superseded passes to the deleted memory's own successor (the first
-- one down the chain that stays): deleting B of A <- B <- C leaves A superseded by C, not current
-- beside C. With no successor it becomes current again.
CREATE OR REPLACE TEMP TABLE doomed_heirs AS
    WITH RECURSIVE chain(start, cur, depth) AS (
        SELECT id, superseded_by, 0 FROM memories WHERE id IN (SELECT id FROM doomed)
        UNION ALL
        SELECT c.start, m.superseded_by, c.depth + 1 FROM chain c JOIN memories m ON m.id = c.cur
        WHERE c.cur IN (SELECT id FROM doomed) AND c.depth < 1000
    )
    SELECT c.start AS id, c.cur AS heir, coalesce(h.valid_from, h.created_at) AS heir_from
    FROM chain c LEFT JOIN memories h ON h.id = c.cur
    WHERE c.cur IS NULL OR c.cur NOT IN (SELECT id FROM doomed);
INSERT INTO memory_links (src_id, dst_id, kind, scope_key, user_id, agent_id, run_id, created_at)
    SELECT d.heir, m.id, 'supersedes', m.scope_key, m.user_id, m.agent_id, m.run_id, (now() AT TIME ZONE 'UTC')
    FROM memories m JOIN doomed_heirs d ON m.superseded_by = d.id
    WHERE d.heir IS NOT NULL AND m.id NOT IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = d.heir,
        invalidated_at = CASE WHEN d.heir IS NULL THEN NULL
                              ELSE greatest(d.heir_from, coalesce(memories.valid_from, d.heir_from)) END
    FROM doomed_heirs d
    WHERE memories.superseded_by = d.id AND memories.id NOT IN (SELECT id FROM doomed);
UPDATE memories SET superseded_by = NULL, invalidated_at = NULL   -- a cycle inside the deleted set
    WHERE superseded_by IN (SELECT id FROM doomed) AND id NOT IN (SELECT id FROM doomed);
DELETE FROM memories WHERE id IN (SELECT id FROM doomed);
DELETE FROM entities WHERE id IN (SELECT id FROM doomed_entities)
    AND id NOT IN (SELECT entity_id FROM entity_postings WHERE entity_id IN (SELECT id FROM doomed_entities));
DROP TABLE doomed_entities;
DROP TABLE doomed_heirs;
