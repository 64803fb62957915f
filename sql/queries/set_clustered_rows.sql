-- After a re-cluster (memstore/store/optimize.py): how many memories were sorted by scope; rows
-- beyond it are the unclustered tail that triggers the next automatic re-cluster.
INSERT OR REPLACE INTO store_meta VALUES ('clustered_rows', CAST($rows AS VARCHAR));
