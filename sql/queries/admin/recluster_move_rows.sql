-- The end of a re-cluster pass (memstore/store/recluster.py _move_strays): append a copy, sorted by
-- scope, of the rows other writers added between the pass's slices (/*ROWS*/ = their row-id ranges,
-- "rowid >= $a0 AND rowid < $b0 OR ..."). They sit inside the sorted run, each widening the min/max
-- of the row group it landed in to a random user; moved behind the run's end they are its tail.
INSERT INTO /*TABLE*/
SELECT * FROM /*TABLE*/
WHERE (/*ROWS*/)
ORDER BY user_id NULLS LAST, agent_id NULLS LAST, run_id NULLS LAST;
