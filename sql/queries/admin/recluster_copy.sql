-- One slice of the re-cluster (memstore/store/recluster.py): append a copy of the slice's rows
-- sorted by scope. /*TABLE*/ = memories or a posting table (they share the identity columns);
-- /*SLICE*/ = a user_id range (zonemaps skip row groups outside it once the table is sorted);
-- $start = the first row the pass sorts (0, or the end of the last sorted run: a tail pass).
INSERT INTO /*TABLE*/
SELECT * FROM /*TABLE*/
WHERE /*SLICE*/ AND rowid >= $start
ORDER BY user_id NULLS LAST, agent_id NULLS LAST, run_id NULLS LAST;
