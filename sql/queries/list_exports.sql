-- Export directories memstore wrote (Parquet exports, snapshots), oldest first.
SELECT id, path, kind FROM exports ORDER BY created_at, id;
