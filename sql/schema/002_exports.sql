-- Files memstore wrote outside the database (Parquet exports, snapshots), so erasure can find
-- and rewrite them. One row per export directory; its manifest.json lists the files.
CREATE TABLE IF NOT EXISTS exports (
    id         VARCHAR PRIMARY KEY,
    path       VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,          -- parquet_export | snapshot
    created_at TIMESTAMP NOT NULL
);
