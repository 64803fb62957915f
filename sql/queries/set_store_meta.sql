-- Set one store_meta key (downstream targets, the lake shard name).
INSERT OR REPLACE INTO store_meta (key, value) VALUES ($key, $value);
