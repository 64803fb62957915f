-- Where each clustered table's sorted runs end (memstore/store/cluster_runs.py): a JSON list, oldest
-- run first; a tail pass sorts only the rows after the last one.
INSERT OR REPLACE INTO store_meta VALUES ('cluster_runs', $runs);
