-- Two current memories of one scope with the same normalised text (dedupe should prevent it).
SELECT 'memories' AS "table", min(id) AS row_id, count(*) || ' current copies of one text in ' || scope_key AS detail
FROM memories WHERE invalidated_at IS NULL GROUP BY scope_key, hash HAVING count(*) > 1;
