"""The token matrix of tests/test_token_matrix.py, through mem0's platform SDK (`mem0ai` MemoryClient,
from PyPI) against a real `memstore serve`: every SDK method aimed at alice's data × every kind of
caller (admin, alice, alice read-only, bob, the support bot's agent token, expired, revoked,
garbage) → allowed / not found / refused, as that test writes it out; and no answer to a non-admin
token holds another scope's text or id."""
from __future__ import annotations

import json
import os
import tempfile
import time
import uuid

import pytest

os.environ.setdefault("MEM0_TELEMETRY", "false")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-dir-"))
pytest.importorskip("mem0")

from mem0 import MemoryClient
from mem0.exceptions import AuthenticationError, MemoryNotFoundError

from memstore.testing.server_process import ServerProcess

CALLERS = ("admin", "alice", "alice_ro", "bob", "agent")
EXPECT = {   # as tests/test_token_matrix.py: what each caller gets when the call targets alice's data
    #              admin  alice  alice_ro  bob   agent (support-bot: alice narrows its scope)
    "read_scope":  ("ok", "ok", "ok",     "nf", "ok"),
    "write_scope": ("ok", "ok", "denied", "nf", "ok"),
    "read_id":     ("ok", "ok", "ok",     "nf", "nf"),
    "write_id":    ("ok", "ok", "denied", "nf", "nf"),
}
RAISES = {"nf": MemoryNotFoundError, "denied": AuthenticationError}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("platform-matrix") / "s.duckdb",
                       config={"embedder": {"provider": "hashing"}}) as srv:
        m = srv.client()
        seed = {"alice": m.add("Alice keeps her spare key under the zebra-7731 flowerpot", user_id="alice", infer=False),
                "bob": m.add("Bob's passport number is quokka-5529", user_id="bob", infer=False),
                "carol": m.add("Carol's ticket says walrus-1234 broke again", user_id="carol",
                               agent_id="support-bot", infer=False)}
        ids = {k: v["results"][0]["id"] for k, v in seed.items()}
        tokens = {"admin": srv.token,
                  "alice": m.create_token("alice-laptop", user_id="alice")["token"],
                  "alice_ro": m.create_token("alice-ro", user_id="alice", read_only=True)["token"],
                  "bob": m.create_token("bob-phone", user_id="bob")["token"],
                  "agent": m.create_token("support-bot", agent_id="support-bot")["token"],
                  "expired": m.create_token("short", user_id="alice", expires="1s")["token"],
                  "revoked": m.create_token("gone", user_id="alice")["token"],
                  "garbage": "mst_" + uuid.uuid4().hex}
        m.revoke_token("gone")
        time.sleep(1.1)
        markers = {"alice": ["zebra-7731", ids["alice"]], "bob": ["quokka-5529", ids["bob"]],
                   "carol": ["walrus-1234", ids["carol"]]}
        own = {"alice": {"alice"}, "alice_ro": {"alice"}, "bob": {"bob"}, "agent": {"carol"}}
        yield {"srv": srv, "m": m, "ids": ids, "tokens": tokens, "markers": markers, "own": own}
        m.close()


def _scratch(world) -> str:
    return world["m"].add(f"scratch note {uuid.uuid4().hex[:8]}", user_id="alice", infer=False)["results"][0]["id"]


CALLS = {   # SDK method -> (kind, the call aimed at alice's data)
    "add": ("write_scope", lambda c, w: c.add("I like tea", user_id="alice", infer=False)),
    "search": ("read_scope", lambda c, w: c.search("flowerpot", filters={"user_id": "alice"})),
    "get_all": ("read_scope", lambda c, w: c.get_all(filters={"AND": [{"user_id": "alice"}]})),
    "get": ("read_id", lambda c, w: c.get(w["ids"]["alice"])),
    "history": ("read_id", lambda c, w: c.history(w["ids"]["alice"])),
    "update": ("write_id", lambda c, w: c.update(_scratch(w), text=f"updated {uuid.uuid4().hex[:6]}")),
    "delete": ("write_id", lambda c, w: c.delete(_scratch(w))),
    "batch_update": ("write_id", lambda c, w: c.batch_update([{"memory_id": _scratch(w),
                                                                     "text": f"batch {uuid.uuid4().hex[:6]}"}])),
    "batch_delete": ("write_id", lambda c, w: c.batch_delete([{"memory_id": _scratch(w)}])),
    "delete_all": ("write_scope", lambda c, w: c.delete_all(user_id="alice", run_id=f"scratch-{uuid.uuid4().hex[:6]}")),
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("method", sorted(CALLS))
def test_every_sdk_method_for_every_caller(world, method, caller):
    client = MemoryClient(api_key=world["tokens"][caller], host=world["srv"].url)
    kind, call = CALLS[method]
    want = EXPECT[kind][CALLERS.index(caller)]
    if want == "ok":
        answer = call(client, world)
    else:
        with pytest.raises(RAISES[want]) as err:
            call(client, world)
        assert err.value.details["error"]["type"] == ("NotFoundError" if want == "nf" else "TokenRightsError")
        answer = err.value.details
    if caller != "admin":
        text = json.dumps(answer)
        leaked = [mk for key, marks in world["markers"].items() if key not in world["own"][caller]
                  for mk in marks if mk in text and not (key == "alice" and kind.endswith("id") and want != "ok")]
        assert not leaked, f"{method} as {caller} leaked {leaked}: {text[:300]}"


@pytest.mark.parametrize("caller", CALLERS)
def test_users_lists_only_what_the_token_sees(world, caller):
    names = {e["name"] for e in MemoryClient(api_key=world["tokens"][caller], host=world["srv"].url).users()["results"]}
    # the entities its memories name (an agent's memories name their users; alice's may name the bot's
    # agent), never another user's
    must, never = {"admin": ({"alice", "bob", "carol", "support-bot"}, set()), "alice": ({"alice"}, {"bob", "carol"}),
                   "alice_ro": ({"alice"}, {"bob", "carol"}), "bob": ({"bob"}, {"alice", "carol", "support-bot"}),
                   "agent": ({"carol", "support-bot"}, {"bob"})}[caller]
    assert must <= names and not names & never, names


@pytest.mark.parametrize("caller", ("expired", "revoked", "garbage"))
def test_a_dead_token_is_refused_when_the_sdk_starts(world, caller):
    with pytest.raises(ValueError, match="expired|wrong bearer token"):
        MemoryClient(api_key=world["tokens"][caller], host=world["srv"].url)
