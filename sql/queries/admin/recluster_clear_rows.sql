-- The end of a re-cluster pass (memstore/store/recluster.py _move_strays): delete the rows
-- recluster_move_rows.sql copied (/*ROWS*/: their row-id ranges, all below $boundary, the table's
-- row-id end before the copy).
DELETE FROM /*TABLE*/
WHERE (/*ROWS*/) AND rowid < $boundary;
