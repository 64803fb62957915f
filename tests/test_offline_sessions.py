"""The offline extractor on working sessions with an assistant (issue 43): golden cases in
tests/golden/extractor/sessions.jsonl (messages with roles; `expect`: texts some memory must
contain; `forbid`: patterns no memory may match; `roles`: the role of the memory containing a
text; `max_chars`: no memory longer). Real spaCy pipeline; also through Memory.add and ingest."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memstore.core.model import Message
from memstore.extraction.extract_heuristic import HeuristicExtractor
from memstore.providers.nlp import shared_nlp

CASES = [json.loads(line) for line in
         (Path(__file__).resolve().parent / "golden" / "extractor" / "sessions.jsonl").read_text().splitlines()
         if line.strip()]


@pytest.fixture(scope="module")
def ex() -> HeuristicExtractor:
    return HeuristicExtractor(shared_nlp(), sessions=True)    # config llm.working_sessions


def _messages(case: dict) -> list[Message]:
    return [Message(role, text, id=f"m{i}") for i, (role, text) in enumerate(case["messages"])]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_golden_session_case(ex, case):
    facts = ex.extract(_messages(case), [], speaker="User").facts
    texts = [f.text for f in facts]
    for want in case["expect"]:
        assert any(want in t for t in texts), (want, texts)
    for pattern in case["forbid"]:
        assert not [t for t in texts if re.search(pattern, t, re.MULTILINE)], (pattern, texts)
    for want, role in case.get("roles", {}).items():
        assert [f.role for f in facts if want in f.text] == [role]
    if "max_chars" in case:
        assert all(len(t) <= case["max_chars"] for t in texts), [len(t) for t in texts]


def test_an_answer_cites_its_own_message_and_names_the_request_from_before(ex):
    """The request may be in the messages before the add (ingest's batches, `recent`)."""
    ask = Message("user", "Which rate limit should the public API use?", id="q")
    answer = Message("assistant", "Use 100 requests per minute per key with Flask-Limiter, and 1,000 per day.",
                     id="a")
    facts = ex.extract([answer], [], speaker="Sam", recent=[ask]).facts
    assert [(f.source_message_ids, f.attributed_to, f.role) for f in facts] == [(["a"], "Assistant", "assistant")]
    assert facts[0].text.startswith("Assistant, on Sam's request 'Which rate limit should the public API use?'")


def test_facts_of_a_request_are_still_extracted(ex):
    facts = ex.extract([Message("user", "I'm using Flask 2.2 and I live in Lisbon. Can you help me add rate "
                                        "limiting to my API?", id="m"),
                        Message("assistant", "Yes: install Flask-Limiter and decorate the routes.", id="r")],
                       [], speaker="Sam").facts
    texts = [f.text for f in facts]
    assert "Sam lives in Lisbon" in texts
    assert any(t.startswith("Sam asked: I'm using Flask 2.2") for t in texts)


def test_through_add_and_search(store_path):
    from memstore import Memory

    memory = Memory(store_path, config={"llm": {"working_sessions": True}})
    memory.add([{"role": "user", "content": "What should I use to store the parsed resumes? ->-> 1,4"},
                {"role": "assistant", "content": "Store them in SQLite with one table per section; it needs no "
                                                 "server and SQLAlchemy can move you to PostgreSQL later."}],
               user_id="sam")
    stored = [r["memory"] for r in memory.get_all(user_id="sam")["results"]]
    assert not any("->->" in s for s in stored)
    hit = memory.search("what did you recommend for storing resumes", user_id="sam", top_k=3)["results"]
    assert any("SQLite" in r["memory"] and r.get("role") == "assistant" for r in hit)
    memory.close()
