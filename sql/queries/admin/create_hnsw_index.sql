-- The analyst HNSW index over every memory's embedding (search_all.INDEX_NAME), cosine metric.
CREATE INDEX memories_embedding_hnsw ON memories USING HNSW (embedding) WITH (metric = 'cosine');
