-- Session settings for the analyst HNSW index (memstore/retrieval/search_all.py): persist it with
-- the store, and search wider. ef_search 1000: on 100k uniform-random 384-d vectors (HNSW's worst
-- case) recall@10 went .19 -> .63 for ~same latency (bench/search_latency.py).
SET hnsw_enable_experimental_persistence = true;
SET hnsw_ef_search = 1000;
