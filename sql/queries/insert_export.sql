-- Register a directory of files written outside the database (see sql/schema/002_exports.sql).
INSERT INTO exports (id, path, kind, created_at) VALUES ($id, $path, $kind, $created_at);
