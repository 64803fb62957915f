-- Erasures whose verification failed or whose rewrite was skipped: old bytes may remain.
SELECT 'erasure_receipts' AS "table", id AS row_id,
       'erasure ' || method || ', verified=false at ' || strftime(completed_at, '%Y-%m-%d %H:%M:%S') AS detail
FROM erasure_receipts WHERE NOT verified;
