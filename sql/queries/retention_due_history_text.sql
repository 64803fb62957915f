-- History events whose text is older than the governing retention policy (see
-- retention_due_messages.sql for how a policy is chosen). Only rows that still hold text.
WITH matched AS (
    SELECT h.id, h.created_at, p.retain_days,
           row_number() OVER (PARTITION BY h.id
               ORDER BY (p.user_id IS NOT NULL)::INT + (p.agent_id IS NOT NULL)::INT + (p.run_id IS NOT NULL)::INT DESC,
                        coalesce(p.retain_days, 2147483647), p.id) AS rk
    FROM history h
    JOIN retention_policies p
      ON p.target = 'history_text'
     AND (p.user_id IS NULL OR p.user_id = h.user_id)
     AND (p.agent_id IS NULL OR p.agent_id = h.agent_id)
     AND (p.run_id IS NULL OR p.run_id = h.run_id)
    WHERE h.old_memory IS NOT NULL OR h.new_memory IS NOT NULL
)
SELECT id FROM matched
WHERE rk = 1 AND retain_days IS NOT NULL AND created_at < $now - to_days(retain_days);
