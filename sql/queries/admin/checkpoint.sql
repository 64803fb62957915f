-- Write the WAL into the store file (after an index build or a re-cluster).
CHECKPOINT;
