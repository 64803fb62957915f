-- One past the highest row id a table holds now (memstore/store/recluster.py): rows a slice
-- copies land above it, so the slice's delete removes only the rows it copied from.
SELECT coalesce(max(rowid) + 1, 0) FROM /*TABLE*/;
