-- The rows just before a sorted run's end $end, newest first (memstore/store/cluster_runs.py
-- mark_end): the identities (/*KEYS*/) of a few of them mark where the run ends.
SELECT rowid, /*KEYS*/
FROM /*TABLE*/
WHERE rowid >= $from AND rowid < $end
ORDER BY rowid DESC;
