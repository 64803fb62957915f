-- The identity (/*KEYS*/) of the row at one row id (memstore/store/cluster_runs.py resolve_end):
-- is the row recorded as a sorted run's last still there?
SELECT /*KEYS*/
FROM /*TABLE*/
WHERE rowid = $rowid;
