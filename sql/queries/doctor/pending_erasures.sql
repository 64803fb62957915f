-- Erasures journaled but not finished: the scope's rows are deleted, its bytes may remain.
SELECT 'pending_erasures' AS "table", id AS row_id,
       'erasure requested at ' || strftime(requested_at, '%Y-%m-%d %H:%M:%S') || ' is not finished ('
       || attempts || ' failed attempt(s)' || coalesce(': ' || last_error, '') || '); doctor(repair=True) or scrub() finishes it' AS detail
FROM pending_erasures;
