-- The newest rows of a clustered table, newest first (memstore/store/cluster_runs.py mark_end):
-- the identities (/*KEYS*/) of a few of them mark where the sorted run a pass just wrote ends.
SELECT rowid, /*KEYS*/
FROM /*TABLE*/
WHERE rowid >= $from
ORDER BY rowid DESC;
