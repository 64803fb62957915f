-- One slice of the re-cluster (memstore/store/recluster.py): delete the rows the slice copied
-- (the originals sit in [$start, $boundary): the copies went above $boundary, the table's
-- row-id end before the copy).
DELETE FROM /*TABLE*/
WHERE /*SLICE*/ AND rowid >= $start AND rowid < $boundary;
