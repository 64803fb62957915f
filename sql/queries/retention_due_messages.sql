-- Messages older than the retention policy that governs them. A policy's NULL identity column
-- matches any value; the most specific matching policy wins (ties: the shorter retention);
-- retain_days NULL keeps forever.
WITH matched AS (
    SELECT m.id, m.created_at, p.retain_days,
           row_number() OVER (PARTITION BY m.id
               ORDER BY (p.user_id IS NOT NULL)::INT + (p.agent_id IS NOT NULL)::INT + (p.run_id IS NOT NULL)::INT DESC,
                        coalesce(p.retain_days, 2147483647), p.id) AS rk
    FROM messages m
    JOIN retention_policies p
      ON p.target = 'messages'
     AND (p.user_id IS NULL OR p.user_id = m.user_id)
     AND (p.agent_id IS NULL OR p.agent_id = m.agent_id)
     AND (p.run_id IS NULL OR p.run_id = m.run_id)
)
SELECT id FROM matched
WHERE rk = 1 AND retain_days IS NOT NULL AND created_at < $now - to_days(retain_days);
