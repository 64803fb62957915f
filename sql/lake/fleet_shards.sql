-- fleet_shards: one row per shard that published into the lake (the dashboard's Fleet page).
--
--   shard          the shard's name in the lake
--   publishes      how many publishes committed (each one lake snapshot)
--   last_publish   when the last one committed (UTC)
--   scopes, memories, current   what the lake holds of the shard now
--   store_memories the shard's own count of memories at its last publish (`_publishes.totals`;
--                  an erasure that reached the lake since is not in it: a publish that finds
--                  nothing to send writes no row)
WITH pub AS (
    SELECT shard, count(*) AS publishes, max(published_at) AS last_publish,
           CAST(json_extract(arg_max(totals, published_at), '$.memories') AS BIGINT) AS store_memories
    FROM publishes GROUP BY shard
),
mem AS (
    SELECT shard, count(DISTINCT scope_key) AS scopes, count(*) AS memories,
           count(*) FILTER (WHERE invalidated_at IS NULL
                              AND (expiration_date IS NULL
                                   OR expiration_date > (now() AT TIME ZONE 'UTC'))) AS current
    FROM memories GROUP BY shard
)
SELECT coalesce(pub.shard, mem.shard) AS shard, coalesce(pub.publishes, 0) AS publishes, pub.last_publish,
       coalesce(mem.scopes, 0) AS scopes, coalesce(mem.memories, 0) AS memories,
       coalesce(mem.current, 0) AS current, pub.store_memories
FROM pub FULL JOIN mem ON mem.shard = pub.shard
ORDER BY shard
