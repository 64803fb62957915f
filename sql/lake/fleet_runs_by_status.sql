-- fleet_runs_by_status: extraction runs of every shard counted by status and extractor (the
-- Overview's chart; a store's page counts its runs in Polars, a fleet's are counted here).
--
--   shard, status, extractor, runs
SELECT shard, status, extractor, count(*) AS runs
FROM extraction_runs
GROUP BY ALL
ORDER BY shard, status, extractor
