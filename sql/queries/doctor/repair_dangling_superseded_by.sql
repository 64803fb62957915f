-- As when the superseding memory is deleted: the fact becomes current again.
UPDATE memories SET superseded_by = NULL, invalidated_at = NULL
WHERE superseded_by IS NOT NULL AND superseded_by NOT IN (SELECT id FROM memories);
