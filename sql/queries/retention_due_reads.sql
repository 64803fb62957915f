-- Reads (the audit of reads) older than their retention: the most specific 'reads' policy that
-- matches the read's scope (a policy's NULL identity column matches any value; ties: the shorter
-- retention), else $default_days (config audit.retain_days); NULL keeps forever.
WITH matched AS (
    SELECT r.rowid AS rid, r.ts, p.id AS policy, p.retain_days,
           row_number() OVER (PARTITION BY r.rowid
               ORDER BY (p.user_id IS NOT NULL)::INT + (p.agent_id IS NOT NULL)::INT + (p.run_id IS NOT NULL)::INT DESC,
                        coalesce(p.retain_days, 2147483647), p.id) AS rk
    FROM reads r
    LEFT JOIN retention_policies p
      ON p.target = 'reads'
     AND (p.user_id IS NULL OR p.user_id = r.user_id)
     AND (p.agent_id IS NULL OR p.agent_id = r.agent_id)
     AND (p.run_id IS NULL OR p.run_id = r.run_id)
)
SELECT rid FROM matched
WHERE rk = 1
  AND ts < $now - to_days(CAST(CASE WHEN policy IS NULL THEN $default_days ELSE retain_days END AS INTEGER));
