"""mem0's platform SDK (`mem0ai` MemoryClient, from PyPI) against a 2-shard cluster behind HAProxy,
changing only the host: the balancer routes its calls by the user in their body, query string or
filters, so each add lands once, on the shard that owns its user, and reads find it there. What names
no user (a memory by id, the entity list) is answered by the balancer with a typed IdentityError
the SDK raises, never a 404 page or a wrong shard's answer."""
from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("MEM0_TELEMETRY", "false")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-dir-"))
pytest.importorskip("mem0")

from mem0 import MemoryClient
from mem0.exceptions import ValidationError as Mem0ValidationError

from memstore.core.placement import shard_of_key
from memstore.testing.cluster_process import ClusterProcess, haproxy_available

pytestmark = pytest.mark.skipif(not haproxy_available(), reason="haproxy is not installed (.ci/run installs it)")


def _direct(cluster, shard):
    """memstore's own client on one shard's URL (not through the balancer)."""
    from memstore.api.http_client import MemoryClient as Direct

    return Direct(cluster.servers[shard].url, token=cluster.token)


def test_platform_sdk_through_a_two_shard_balancer(tmp_path):
    with ClusterProcess(tmp_path, shards=2, config={"embedder": {"provider": "hashing"}}) as cluster:
        c = MemoryClient(api_key=cluster.token, host=cluster.url)          # ping: any shard answers
        users = {}
        for i in range(40):                                              # one user per shard
            users.setdefault(shard_of_key(f"pc-{i}", 2), f"pc-{i}")
            if len(users) == 2:
                break
        ids = {}
        for shard, user in users.items():
            ids[user] = c.add(f"{user} likes sailing", user_id=user, infer=False)["results"][0]["id"]
            c.add(f"{user} plans a trip", filters={"user_id": user}, run_id="trip", infer=False)   # user in filters
        agent = c.add("The support bot answers in French", agent_id="pc-bot", infer=False)["results"][0]["id"]

        for shard, user in users.items():                               # each user's rows on its own shard only
            with _direct(cluster, shard) as own, _direct(cluster, 1 - shard) as other:
                assert len(own.get_all(user_id=user)["results"]) == 2
                assert own.get(ids[user]) is not None and other.get(ids[user]) is None
        with _direct(cluster, shard_of_key("pc-bot", 2)) as bot_shard:
            assert bot_shard.get(agent)["agent_id"] == "pc-bot"

        for user, mid in ids.items():
            found = c.search("sailing", filters={"AND": [{"user_id": user}]})
            assert [m["id"] for m in found["results"]][:1] == [mid]
            trips = c.get_all(filters={"AND": [{"user_id": user}, {"run_id": "*"}]})
            assert [m["memory"] for m in trips["results"]] == [f"{user} plans a trip"]
            assert c.get_all(filters={"user_id": user}, page=1, page_size=1)["count"] == 2
        first = next(iter(users.values()))
        c.delete_all(user_id=first)                                       # routed by the query string
        assert c.get_all(filters={"user_id": first})["count"] == 0
        assert c.get_all(filters={"user_id": users[1 - shard_of_key(first, 2)]})["count"] == 2

        with pytest.raises(Mem0ValidationError, match="names no user"):   # by id: the balancer cannot tell
            c.get(ids[users[1 - shard_of_key(first, 2)]])
        with pytest.raises(Mem0ValidationError, match="names no user"):
            c.users()
