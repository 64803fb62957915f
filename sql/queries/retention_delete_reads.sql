-- Delete the reads retention_due_reads.sql found (by rowid, inside the same write unit).
DELETE FROM reads WHERE rowid IN (SELECT unnest($rids::BIGINT[]));
