"""add() runs the embedder beside spaCy (memstore/pipeline/beside.py): same rows as one after the
other, errors as before; vectors written by insert_values arrive exactly as given."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import memstore.pipeline.beside as beside_mod
from memstore import Memory
from memstore.core.errors import LLMUnavailableError, QueryError
from memstore.providers.embed_hashing import HashingEmbedder
from memstore.store.database import Database

TEXT = ("I moved to Seattle in May and started working at Globex. My sister Maria loves hiking "
        "and we met Bob at the jazz festival in Portland")


class ThreadedHashing(HashingEmbedder):
    """The hashing embedder as an embedder that releases the GIL would be treated (run beside
    spaCy); remembers the threads it ran on and can fail on request."""

    releases_gil = True

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []
        self.fail_on: int | None = None     # from this call number on (0-based), every call raises

    def embed(self, texts):
        self.threads.append(threading.current_thread().name)
        if self.fail_on is not None and len(self.threads) - 1 >= self.fail_on:
            raise LLMUnavailableError("embedding endpoint failed: test")
        return super().embed(texts)


def _memory(path, embedder):
    m = Memory(str(path), config={"embedder": {"provider": "hashing"}})
    m._rt.embedder = embedder
    return m


def _stored(m):
    rows = m.db.rows("t", sql="SELECT memory, embedding FROM memories ORDER BY memory")
    ents = m.db.rows("t", sql="SELECT e.norm, m.memory FROM entity_postings p JOIN entities e ON e.id = p.entity_id "
                              "JOIN memories m ON m.id = p.memory_id ORDER BY 1, 2")
    terms = m.db.rows("t", sql="SELECT k.term, k.tf, m.memory FROM keyword_postings k JOIN memories m "
                               "ON m.id = k.memory_id ORDER BY 1, 3")
    return rows, ents, terms


@pytest.mark.parametrize("in_turn", [False, True])
def test_beside_stores_what_in_turn_stores(tmp_path, monkeypatch, in_turn):
    monkeypatch.setattr(beside_mod, "IN_TURN", in_turn)
    emb = ThreadedHashing()
    m = _memory(tmp_path / f"b{in_turn}.duckdb", emb)
    m.add(TEXT, user_id="ana")
    got = _stored(m)
    m.close()
    monkeypatch.setattr(beside_mod, "IN_TURN", True)
    ref_m = _memory(tmp_path / "ref.duckdb", HashingEmbedder())
    ref_m.add(TEXT, user_id="ana")
    ref = _stored(ref_m)
    ref_m.close()
    assert got[0] and got[1] and got[2]
    assert got == ref
    on_helper = [t for t in emb.threads if t == "memstore-beside"]
    assert bool(on_helper) is not in_turn          # the facts' embedding ran on the helper thread


def test_a_failed_embedding_beside_spacy_stores_nothing(tmp_path):
    emb = ThreadedHashing()
    m = _memory(tmp_path / "f.duckdb", emb)
    m.add("I like tea", user_id="ana")
    n_before = m.db.scalar("SELECT count(*) FROM memories")
    emb.fail_on = len(emb.threads)           # the facts' embedding fails (the heuristic extractor embeds no context)
    with pytest.raises(LLMUnavailableError):
        m.add(TEXT, user_id="ana")
    assert emb.threads[-1] == "memstore-beside"
    assert m.db.scalar("SELECT count(*) FROM memories") == n_before
    m.close()


@pytest.mark.parametrize("arrow_from", [0, 10**9])      # vectors as Arrow / as bound parameters
def test_insert_values_writes_vectors_exactly(tmp_path, monkeypatch, arrow_from):
    import memstore.store.database as database

    monkeypatch.setattr(database, "_ARROW_FLOATS", arrow_from)
    db = Database(str(tmp_path / "v.duckdb"), dim=4, embedder="t")
    vecs = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    import datetime as dt
    now = dt.datetime(2024, 1, 1)
    db.insert_values("memories", {
        "id": ["a", "b", "c"], "memory": ["x", "y", "z"], "hash": ["1", "2", "3"], "scope_key": ["s"] * 3,
        "created_at": [now] * 3, "embedding": [vecs[0], vecs[1].tolist(), vecs[2]],
        "source_message_ids": [["m1"], None, []]})
    rows = db.rows("t", sql="SELECT id, memory, embedding, source_message_ids FROM memories ORDER BY id")
    assert [r[:2] for r in rows] == [("a", "x"), ("b", "y"), ("c", "z")]
    assert np.array_equal(np.array([r[2] for r in rows], np.float32), vecs)
    assert [r[3] for r in rows] == [["m1"], None, []]
    with pytest.raises(QueryError):          # a vector of the wrong size
        db.insert_values("memories", {"id": ["d"], "memory": ["w"], "hash": ["4"], "scope_key": ["s"],
                                      "created_at": [now], "embedding": [np.ones(3, np.float32)]})
    assert db.scalar("SELECT count(*) FROM memories") == 3
    db.close()


@pytest.mark.parametrize("in_turn", [False, True])
def test_the_llm_sees_the_same_context_beside_or_in_turn(tmp_path, monkeypatch, in_turn):
    """The recent messages are read while the embedding endpoint embeds the new ones (a real
    HTTP endpoint: the scripted server); the prompt is the one the in-turn order builds."""
    from memstore.testing.openai_server import ScriptedOpenAIServer

    monkeypatch.setattr(beside_mod, "IN_TURN", in_turn)
    answers = iter(['{"facts": [{"text": "Ana lives in Lisbon", "attributed_to": "Ana"}]}',
                    '{"facts": [{"text": "Ana moved to Porto", "attributed_to": "Ana"}]}'])
    with ScriptedOpenAIServer(chat_responder=lambda body: next(answers)) as srv:
        endpoint = {"provider": "openai", "base_url": srv.base_url, "api_key": "test"}
        m = Memory(str(tmp_path / "c.duckdb"), config={
            "llm": dict(endpoint, model="scripted-model", max_retries=0, timeout=5),
            "embedder": dict(endpoint, model="scripted-embed", dims=384)})
        m.add("I live in Lisbon", user_id="ana")
        m.add("I moved to Porto last week", user_id="ana")
        m.close()
        prompts = [r["json"]["messages"][-1]["content"] for r in srv.requests if r["path"].endswith("/chat/completions")]
    assert len(prompts) == 2
    assert "I live in Lisbon" in prompts[1] and "Ana lives in Lisbon" in prompts[1]   # message and memory
