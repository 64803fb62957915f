"""The LLM answer has bounds: a total deadline per call (a trickling server cannot hold add()
for minutes), a cap on fact length, facts per answer and answer bytes. A capped answer is a
`malformed` run that stores no memory, keeps the raw answer (first 64 KB) and the prompt version;
the raw answer goes with erasure and with the messages retention policy."""
from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from memstore import Memory
from memstore.core.errors import LLMUnavailableError
from memstore.extraction.extract_llm import PROMPT_VERSION, RAW_KEEP
from memstore.testing.openai_server import ScriptedOpenAIServer


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as srv:
        yield srv


def llm(path, srv, **extra) -> Memory:
    return Memory(str(path), config={"embedder": {"provider": "hashing"},
                                     "llm": {"provider": "openai", "base_url": srv.base_url, "model": "m",
                                             "timeout": 2, "max_retries": 1, **extra}})


def facts(*texts: str) -> str:
    return json.dumps({"facts": [{"text": t} for t in texts]})


def runs(m: Memory) -> list[dict]:
    return m.sql("SELECT status, error, prompt_version, raw_answer, n_facts FROM extraction_runs "
                 "ORDER BY created_at").to_dicts()


def test_a_trickling_answer_is_cut_off_at_the_total_deadline(tmp_path, server):
    m = llm(tmp_path / "t.duckdb", server, deadline=3)
    server.push_trickle(facts("Ann likes tea"), chunk=1, interval=0.05)     # ~10 s of body, 1 byte / 50 ms
    t0 = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="deadline of 3 s"):
        m.add("I like tea", user_id="ann")
    took = time.monotonic() - t0
    assert took < 8, f"add() held on for {took:.1f} s with llm.deadline=3"
    assert m.get_all(user_id="ann")["results"] == []
    [run] = runs(m)
    assert run["status"] == "llm_error" and run["prompt_version"] == PROMPT_VERSION
    m.close()


def test_a_fact_over_the_length_cap_makes_the_run_malformed_and_stores_nothing(tmp_path, server):
    m = llm(tmp_path / "f.duckdb", server)
    server.push_chat(facts("Ann likes tea", "Ann " + "very " * 1000 + "long"))
    out = m.add("I like tea", user_id="ann")
    assert out["results"] == [] and out["extraction"]["status"] == "malformed"
    assert "llm.max_fact_chars (2000)" in out["extraction"]["error"]
    [run] = runs(m)
    assert run["status"] == "malformed" and run["prompt_version"] == PROMPT_VERSION
    assert run["raw_answer"].startswith('{"facts"') and "Ann likes tea" in run["raw_answer"]
    assert m.get_all(user_id="ann")["results"] == []                  # nothing partially stored
    m.close()


def test_too_many_facts_is_malformed_and_the_caps_are_configurable(tmp_path, server):
    m = llm(tmp_path / "n.duckdb", server)
    server.push_chat(facts(*[f"Ann owns book number {i}" for i in range(201)]))
    out = m.add("I own books", user_id="ann")
    assert out["extraction"]["status"] == "malformed" and "llm.max_facts (200)" in out["extraction"]["error"]
    assert m.get_all(user_id="ann")["results"] == []
    m.close()
    m = llm(tmp_path / "n2.duckdb", server, max_facts=3, max_fact_chars=30)
    server.push_chat(facts("Ann a", "Ann b", "Ann c", "Ann d"))
    assert "llm.max_facts (3)" in m.add("x", user_id="ann")["extraction"]["error"]
    server.push_chat(facts("Ann likes tea", "Ann likes green tea"))
    assert len(m.add("x", user_id="ann")["results"]) == 2
    m.close()


def test_a_huge_answer_is_cut_off_and_only_its_head_kept(tmp_path, server):
    m = llm(tmp_path / "h.duckdb", server)
    server.push_chat(facts("Ann " + "x" * 5_000_000))                  # a 5 MB answer
    out = m.add("I like tea", user_id="ann")
    assert out["extraction"]["status"] == "malformed"
    assert "llm.max_answer_bytes" in out["extraction"]["error"]
    [run] = runs(m)
    assert 0 < len(run["raw_answer"]) <= RAW_KEEP
    assert m.get_all(user_id="ann")["results"] == []
    m.close()


def test_raw_answers_go_with_erasure_and_with_message_retention(tmp_path, server):
    m = llm(tmp_path / "r.duckdb", server)
    server.push_chat('{"facts": "Zorblequark is not a list"}')
    m.add("Zorblequark", user_id="ann")
    server.push_chat('{"facts": "Plimtoxian is not a list"}')
    m.add("Plimtoxian", user_id="bob")
    assert {r["raw_answer"] is not None for r in runs(m)} == {True}
    m.set_retention("messages", 1, user_id="bob")
    m.apply_retention(now=dt.datetime.now() + dt.timedelta(days=3))
    bob = m.sql("SELECT raw_answer FROM extraction_runs WHERE user_id = 'bob'").to_dicts()
    assert bob == [{"raw_answer": None}]
    receipt = m.forget(user_id="ann")
    assert receipt["verified"] is True and receipt["rows_removed"]["extraction_runs"] == 1
    m.close()
    data = (tmp_path / "r.duckdb").read_bytes()
    assert b"Zorblequark" not in data and b"Plimtoxian" not in data
