"""Searches that `memstore serve --fronts N` answers in its front processes from copies of the
owner's search snapshots (memstore/server/front_search.py).

Real servers (subprocesses) on one real store: the same searches through fronts and through one
process find the same memories in the same order with the same scores; an add is found at once by
the next search through any front; a revoked token is refused on its next search; a scoped token
reads no other scope through a copy. Each test checks that copies did answer (the owner's
`front_searches` counts in /health), so none passes by going to the owner only."""
from __future__ import annotations

import pytest

from memstore.api.http_client import MemoryClient
from memstore.core.errors import AuthError, MemstoreError, NotFoundError
from memstore.memory import Memory
from memstore.testing.server_process import ServerProcess
from tests.test_workers import CONFIG, TURNS

SEARCHES = [dict(query="where does ana live", user_id="ana"), dict(query="parcel 137", user_id="ana"),
            dict(query="what games does bo play", user_id="bo"), dict(query="locker 3", user_id="ana", agent_id="desk"),
            dict(query="parcel in the locker", filters={"user_id": "ana", "topic": "food"}),
            dict(query="parcel", user_id="ana", channels=["keyword"]),
            dict(query="parcel", filters={"user_id": "ana", "topic": {"in": ["food"]}}),     # a list: the owner's
            dict(query="where does ana live", user_id="ana", show_expired=True)]               # not from copies


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("front-search") / "s.duckdb"
    m = Memory(str(path), config=CONFIG, embedded=True)
    for i, (user, text) in enumerate(TURNS):
        m.add(text, user_id=user, timestamp=f"2024-01-0{i + 1}T10:00")
    for i in range(30):         # dated: recency does not move between the two servers' searches
        m.add(f"note {i}: the parcel {100 + i * 37 % 101} is in locker {i % 7}", user_id="ana",
              agent_id="desk" if i % 2 else "car", metadata={"topic": "food" if i % 3 else "travel"}, infer=False,
              timestamp=f"2024-02-01T10:{i:02d}")
    m.close()
    return path


@pytest.fixture(scope="module")
def server(store):
    with ServerProcess(store, config=CONFIG, args=["--fronts", "2"]) as srv:
        yield srv


def _copies(srv: ServerProcess) -> int:
    """Searches the fronts answered from their copies so far."""
    return srv.client().server_info()["front_searches"].get("fresh", 0)


def _found(client) -> list:
    return [[(r["id"], r["score"]) for r in client.search(**s, top_k=8)["results"]] for s in SEARCHES]


def _client(srv: ServerProcess, token: str | None = None) -> MemoryClient:
    """A client on a connection of its own (so its calls may reach the other front)."""
    return MemoryClient(srv.url, token=token or srv.token)


def test_an_add_is_found_at_once_through_any_front(server):
    before = _copies(server)
    for i in range(5):
        for _ in range(12):         # both fronts likely hold a current copy of cy's scope now
            _client(server).search("kettle", user_id="cy")
        text = f"the kettle number {i} is blue"
        _client(server).add(text, user_id="cy", infer=False, timestamp=f"2024-03-01T10:0{i}")
        found = _client(server).search("kettle", user_id="cy", top_k=20)      # a new connection: any front
        assert text in [r["memory"] for r in found["results"]]
    assert _copies(server) > before


def test_copies_keep_answering_while_other_scopes_are_written(server):
    """Adds to other users between searches leave a scope's copies current (each add says its
    scope): the fronts answer most of gus's searches themselves, and what they answer is current."""
    admin = server.client()
    admin.add("Gus keeps his bike in the shed", user_id="gus", infer=False, timestamp="2024-06-01T10:00")
    for _ in range(12):
        _client(server).search("bike", user_id="gus")
    before = server.client().server_info()["front_searches"]
    for i in range(20):
        _client(server).add(f"writer {i} has a red pen", user_id=f"writer-{i % 4}", infer=False)
        found = _client(server).search("bike", user_id="gus")["results"]
        assert [r["memory"] for r in found] == ["Gus keeps his bike in the shed"]
    after = server.client().server_info()["front_searches"]
    assert after.get("fresh", 0) - before.get("fresh", 0) >= 10          # not every search went to the owner
    admin.add("Gus bought a new bike bell", user_id="gus", infer=False, timestamp="2024-06-02T10:00")
    assert "Gus bought a new bike bell" in [r["memory"] for r in _client(server).search("bike", user_id="gus")["results"]]


def test_a_revoked_token_is_refused_on_its_next_search(server):
    admin = server.client()
    admin.add("Dee has a cat named Miso", user_id="dee", infer=False, timestamp="2024-04-01T10:00")
    dee = _client(server, admin.create_token("dee-phone", user_id="dee")["token"])
    before = _copies(server)
    for _ in range(9):             # a copy goes out once the owner's snapshot outlived 4 searches
        assert [r["memory"] for r in dee.search("cat")["results"]] == ["Dee has a cat named Miso"]
    assert _copies(server) > before                 # the scope learned from the owner, then copies
    admin.revoke_token("dee-phone")
    with pytest.raises(AuthError):
        dee.search("cat")


def test_a_scoped_token_reads_no_other_scope_through_a_copy(server):
    admin = server.client()
    admin.add("Eve hides the key under the mat", user_id="eve", infer=False, timestamp="2024-05-01T10:00")
    admin.add("Fay keeps her key in a box", user_id="fay", infer=False, timestamp="2024-05-01T10:00")
    fay = _client(server, admin.create_token("fay-app", user_id="fay")["token"])
    before = _copies(server)
    for _ in range(9):
        eve = admin.search("key", user_id="eve")["results"]
        assert [r["memory"] for r in eve] == ["Eve hides the key under the mat"]
        assert [r["memory"] for r in fay.search("key")["results"]] == ["Fay keeps her key in a box"]
        assert [r["memory"] for r in fay.search("key", user_id="fay")["results"]] == ["Fay keeps her key in a box"]
        with pytest.raises(NotFoundError):
            fay.search("key", user_id="eve")
        with pytest.raises(MemstoreError):
            fay.search("key", filters={"user_id": "eve"})
    assert _copies(server) - before >= 4            # eve's and fay's scopes both held by the fronts


def test_searches_through_fronts_equal_one_process(server, store):
    """Last in the module: it stops the fronts server and opens its store with `--fronts 0`."""
    before = _copies(server)
    rounds = [_found(server.client()) for _ in range(8)]      # a filter's copy comes on its sixth search
    assert _copies(server) - before >= 8
    assert all(r == rounds[0] for r in rounds[1:])              # copies and the owner's searches agree
    assert all(rounds[0]) and len({len(r) for r in rounds[0]}) > 1
    server.stop()
    with ServerProcess(store, config=CONFIG, args=["--fronts", "0"]) as one:
        assert _found(one.client()) == rounds[-1]                # ids, order and scores
