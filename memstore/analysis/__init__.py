"""Analyst-facing reads of a store, behind `Memory.frame / sql / export_parquet / import_parquet`.

- frames.py          one Polars frame per projection (memories, history, entities, postings, ...)
- readonly_sql.py    `m.sql()`: checks a statement is a single read-only query, runs it, rolls back
- parquet_export.py  every table as zstd Parquet + manifest.json (schema version, rows, sha256)
- parquet_import.py  verify an export's checksums and load it into a new store
- quoting.py         SQL literal / identifier quoting for the few statements built from values
"""
