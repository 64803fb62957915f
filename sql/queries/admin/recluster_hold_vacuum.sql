-- While a re-cluster pass moves rows (memstore/store/recluster.py vacuum_held): the pass's checkpoints
-- schedule /*TASKS*/ vacuum tasks (0 while it moves rows: an integer). A vacuum rewrites every row
-- group a slice left partly deleted (in append order: all of them), and DuckDB makes every COMMIT
-- wait for a running CHECKPOINT; without it a checkpoint only writes the rows moved since the last
-- one (measured: 0.04 s instead of 0.5-1.1 s a quarter of a 2M-row table). The setting is restored
-- before the pass's last checkpoint, which drops the row groups the pass emptied.
SET max_vacuum_tasks = /*TASKS*/;
