-- Where a sorted run's sentinel row is now (memstore/store/cluster_runs.py resolve_end): a CHECKPOINT
-- that vacuums deleted rows moves it (and every row after it) to a lower row id, never a higher one.
SELECT max(rowid)
FROM /*TABLE*/
WHERE /*MATCH*/ AND rowid < $end;
