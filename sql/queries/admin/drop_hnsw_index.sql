-- The analyst HNSW index (search_all.INDEX_NAME); rebuilt by create_hnsw_index.
DROP INDEX IF EXISTS memories_embedding_hnsw;
