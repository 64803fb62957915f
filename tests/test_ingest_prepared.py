"""The owner's half of an ingest prepared elsewhere (`ingest_known` / `ingest_prepared`, what the Ray
path sends: memstore/on_ray/), without Ray: conversations prepared here with the workers' own
function, sent as the JSON of memstore/wire/prepared.py to a real `memstore serve`, checked like any
request and confined by the caller's token; a second delivery stores nothing."""
from __future__ import annotations

import json

import pytest

from memstore import Memory
from memstore.api.http_client import MemoryClient
from memstore.core.config import MemoryConfig
from memstore.core.errors import ArgumentError, InvalidInputError, NotFoundError, TokenRightsError
from memstore.core.identity import Scope
from memstore.core.model import AddOptions
from memstore.ingest.plan import ConversationJob, Stager, conversation_states
from memstore.ingest.readers import read_source
from memstore.ingest.report import IngestReport
from memstore.pipeline.workers import BatchDocs, model_runtime, prepare_batch
from memstore.testing.server_process import ServerProcess
from memstore.wire.prepared import encode_conversation

CONFIG = {"embedder": {"provider": "hashing"}}
LOCOMO = "data/demo/locomo/carol_dave.json"


def _prepared(scope: Scope, now) -> list[dict]:
    """The demo LoCoMo file's conversations, planned and prepared as a Ray worker does."""
    rt = model_runtime(MemoryConfig.from_dict(CONFIG))
    stager = Stager(scope, IngestReport(ingest_id="x", scope=scope.as_dict()))
    out = []
    for conv in read_source(LOCOMO, "locomo", []):
        staged = stager.stage(conv, set())
        states = conversation_states(conv, staged.fresh, scope, batch_size=20, metadata=None,
                                     options=AddOptions(gather_context=False, keep_all_messages=True),
                                     n_context=6, now=now)
        ready = prepare_batch(states, rt, docs=BatchDocs(rt))
        job = ConversationJob(format=conv.format, id=conv.id, file=conv.file, keys=staged.keys, states=ready)
        out.append(json.loads(json.dumps(encode_conversation(job, embedder=rt.embedder.name))))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    store = str(tmp_path_factory.mktemp("prep") / "s.duckdb")
    with Memory(store, config=CONFIG) as m:
        bob = m.create_token("bob", user_id="bob")["token"]
        local = m.ingest(LOCOMO, user_id="carol-local", progress=False)
        ingest_now = m.sql("SELECT max(ingested_at) AS t FROM ingest_log")["t"][0]
    with ServerProcess(store, config=CONFIG) as srv:
        yield srv, bob, local, ingest_now


def _memories(client, user: str):
    q = ("SELECT memory, valid_from, invalidated_at IS NOT NULL AS closed, superseded_by IS NOT NULL AS replaced, "
         "len(source_message_ids) AS n_sources FROM memories WHERE user_id = $u ORDER BY ALL")
    return client.sql(q, {"u": user}).rows()


def test_prepared_conversations_commit_like_ingest_and_only_once(served):
    srv, _, local, now = served
    payload = _prepared(Scope(user_id="carol"), now)
    with srv.client() as m:
        known = m.ingest_known([{"conversation": c["source"]["conversation"], "keys": c["keys"]} for c in payload],
                               format="locomo", user_id="carol")
        assert known["known"] == [] and known["embedder"] == "hashing-384"
        first = m.ingest_prepared(payload, user_id="carol")["conversations"]
        assert [c["status"] for c in first] == ["stored"] * len(payload)
        assert sum(c["messages"] for c in first) == local.messages["stored"]
        assert sum(c["memories"]["added"] for c in first) == local.memories["added"]
        assert sum(c["memories"]["superseded"] for c in first) == local.memories["superseded"]
        again = m.ingest_prepared(payload, user_id="carol")["conversations"]
        assert [c["status"] for c in again] == ["already_ingested"] * len(payload)
        assert _memories(m, "carol") == _memories(m, "carol-local")
        known = m.ingest_known([{"conversation": payload[0]["source"]["conversation"], "keys": payload[0]["keys"]}],
                               format="locomo", user_id="carol")["known"]
        assert len(known) == len(payload[0]["keys"])


def test_a_token_commits_only_into_its_own_scope(served):
    srv, bob, _, now = served
    payload = _prepared(Scope(user_id="alice"), now)[:1]
    with MemoryClient(srv.url, token=bob) as as_bob, srv.client() as admin:
        with pytest.raises((TokenRightsError, NotFoundError)):
            as_bob.ingest_prepared(payload, user_id="alice")
        out = as_bob.ingest_prepared(payload)["conversations"]       # the token's scope is filled in
        assert out[0]["status"] == "stored"
        assert admin.sql("SELECT count(*) AS n FROM memories WHERE user_id = 'alice'")["n"][0] == 0
        assert admin.sql("SELECT count(*) AS n FROM memories WHERE user_id = 'bob'")["n"][0] > 0


@pytest.mark.parametrize("change, where", [
    (lambda c: c["adds"][0]["facts"][0].update(embedding="AAAA"), "embedding"),
    (lambda c: c["adds"][0]["facts"][0].update(sources=["not-a-message"]), "sources"),
    (lambda c: c["adds"][0]["messages"][0].update(role="root"), "role"),
    (lambda c: c.update(embedder="openai:text-embedding-3-small"), "embedded with"),
    (lambda c: c["adds"][0]["facts"][0].update(supersedes=["m-of-someone-else"]), "unknown field"),
    (lambda c: c.update(format="pickle"), "format"),         # the OpenAPI schema refuses this one (ArgumentError)
])
def test_bad_conversations_are_refused_with_the_field_named(served, change, where):
    srv, _, _, now = served
    payload = _prepared(Scope(user_id="dora"), now)[:1]
    change(payload[0])
    with srv.client() as m:
        with pytest.raises((InvalidInputError, ArgumentError), match=where):
            m.ingest_prepared(payload, user_id="dora")
        assert m.sql("SELECT count(*) AS n FROM messages WHERE user_id = 'dora'")["n"][0] == 0


def test_cli_on_ray_options_need_on_ray(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "memstore.cli", "ingest", LOCOMO, "--user", "x", "--to",
                          str(tmp_path / "s.duckdb"), "--store", str(tmp_path / "s.duckdb")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--to and --actors go with --on-ray" in out.stderr
    assert not (tmp_path / "s.duckdb").exists()
