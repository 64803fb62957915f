-- One slice of the re-cluster (memstore/store/recluster.py): delete the rows the slice copied
-- (the copies sit at or above $boundary, the table's row count before the copy).
DELETE FROM /*TABLE*/
WHERE /*SLICE*/ AND rowid < $boundary;
