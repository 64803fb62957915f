-- catalog_text: the store's own catalog statements (views, tables, indexes, macros) and the names
-- of its schemas, tables and columns, as DuckDB keeps them in the file. The erasure verifier sets
-- aside a needle found here: it is memstore's text, not a user's.
SELECT sql AS text FROM duckdb_views() WHERE NOT internal AND sql IS NOT NULL
UNION ALL SELECT sql FROM duckdb_tables() WHERE sql IS NOT NULL
UNION ALL SELECT sql FROM duckdb_indexes() WHERE sql IS NOT NULL
UNION ALL SELECT macro_definition FROM duckdb_functions() WHERE NOT internal AND macro_definition IS NOT NULL
UNION ALL SELECT schema_name FROM duckdb_schemas() WHERE NOT internal
UNION ALL SELECT string_agg(column_name, ' ') FROM duckdb_columns() WHERE NOT internal
