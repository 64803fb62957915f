-- Every column of every base table in this database, for erasure (which tables name a scope,
-- a memory or an entity) and for the needle scan (which columns hold text).
SELECT c.table_schema, c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_catalog = c.table_catalog AND t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE t.table_type = 'BASE TABLE' AND c.table_catalog = current_database()
ORDER BY c.table_schema, c.table_name, c.ordinal_position;
