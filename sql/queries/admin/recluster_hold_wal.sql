-- While a re-cluster pass runs (memstore/store/recluster.py wal_held): no automatic checkpoint at
-- a COMMIT. A checkpoint between slices rewrites every row group a slice left partly deleted; the
-- pass checkpoints once at its end, when the row groups it emptied are dropped whole.
SET checkpoint_threshold = '1TiB';
