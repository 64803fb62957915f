"""Many `memstore serve` shards behind one HAProxy: placement, the shard guard, the balancer's config,
the cluster client (routes and fans out) and rebalancing.

    memstore serve --store /data/shard0.duckdb --shard 0/3 --port 9000      # one per shard
    memstore cluster haproxy --shards http://h0:9000,http://h1:9001,http://h2:9002 > memstore.cfg
    haproxy -f memstore.cfg

>>> from memstore.core.placement import shard_of
>>> shard_of({"user_id": "alice"}, 3) in (0, 1, 2)
True
"""
