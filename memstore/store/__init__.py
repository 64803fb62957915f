"""DuckDB storage: connection, schema migrations, named SQL, transactions."""
