-- The downstream copies this store publishes to: store_meta keys 'downstream:<target>'.
SELECT substr(key, 12) AS target, value FROM store_meta WHERE key LIKE 'downstream:%' ORDER BY key;
