-- The end of a re-cluster pass (memstore/store/recluster.py wal_held): the automatic checkpoint's
-- threshold as it was before the pass (/*THRESHOLD*/: that setting's value, quoted).
SET checkpoint_threshold = /*THRESHOLD*/;
