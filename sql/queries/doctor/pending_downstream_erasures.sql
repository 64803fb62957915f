-- Erasures that have not reached a downstream copy yet (the lake): the store is erased, the copy is not.
SELECT 'downstream_erasures' AS "table", id AS row_id,
       'erasure ' || erasure_id || ' requested at ' || strftime(requested_at, '%Y-%m-%d %H:%M:%S')
       || ' has not reached the ' || target || ' (' || attempts || ' failed attempt(s)'
       || coalesce(': ' || last_error, '') || '); the next forget, scrub, doctor --repair, open of the store or publish finishes it' AS detail
FROM downstream_erasures WHERE status = 'pending';
