-- Blank the raw model answers of extraction runs older than the `messages` retention policy that
-- governs them (same matching as retention_due_messages.sql).
WITH matched AS (
    SELECT r.id, r.created_at, p.retain_days,
           row_number() OVER (PARTITION BY r.id
               ORDER BY (p.user_id IS NOT NULL)::INT + (p.agent_id IS NOT NULL)::INT + (p.run_id IS NOT NULL)::INT DESC,
                        coalesce(p.retain_days, 2147483647), p.id) AS rk
    FROM extraction_runs r
    JOIN retention_policies p
      ON p.target = 'messages'
     AND (p.user_id IS NULL OR p.user_id = r.user_id)
     AND (p.agent_id IS NULL OR p.agent_id = r.agent_id)
     AND (p.run_id IS NULL OR p.run_id = r.run_id)
    WHERE r.raw_answer IS NOT NULL
)
UPDATE extraction_runs SET raw_answer = NULL
WHERE id IN (SELECT id FROM matched WHERE rk = 1 AND retain_days IS NOT NULL AND created_at < $now - to_days(retain_days));
