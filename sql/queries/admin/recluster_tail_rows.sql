-- Memories after the last sorted run's recorded end (memstore/store/recluster.py Maintenance.count):
-- the unsorted tail every search reads whole, which starts the next tail pass.
SELECT count(*) FROM memories WHERE rowid >= $end;
