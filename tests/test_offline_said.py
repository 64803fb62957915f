"""The offline extractor never loses what was said (issue 31): third-person and agent-written
statements give a memory with the right attribution, questions and small talk give none, a
sentence the rules make no fact of is kept as said, and casual change cues supersede the old slot
holder (held-out pairs in tests/fixtures/change_cues.txt). Real spaCy pipeline, real stores."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memstore import Memory
from memstore.core.model import Message
from memstore.core.rules.slots import detect_slot
from memstore.extraction.extract_heuristic import HeuristicExtractor
from memstore.providers.nlp import shared_nlp

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "change_cues.txt"
AT = dt.datetime(2024, 6, 12, 10)


@pytest.fixture(scope="module")
def ex() -> HeuristicExtractor:
    return HeuristicExtractor(shared_nlp())


def facts(ex: HeuristicExtractor, text: str, speaker: str = "Alice") -> list:
    return ex.extract([Message("user", text, created_at=AT)], [], speaker=speaker).facts


@pytest.mark.parametrize("text, speaker, expected", [
    ("Alice keeps three beehives on her roof", "Alice", "Alice keeps three beehives on her roof"),
    ("Bob is training for the Berlin marathon", "Alice", "Bob is training for the Berlin marathon"),
    ("Prefers window seats", "Dana", "Dana prefers window seats"),                 # an agent's note
    ("User's daughter starts school in May", "Dana", "Dana's daughter starts school in May"),
    ("The user is allergic to shellfish.", "Dana", "Dana is allergic to shellfish"),
    ("Settled in Porto at last", "Dana", "Dana settled in Porto at last"),
])
def test_third_person_and_agent_notes_are_stored_with_their_speaker(ex, text, speaker, expected):
    fs = facts(ex, text, speaker)
    assert expected in [f.text for f in fs], [f.text for f in fs]
    assert all(f.attributed_to == speaker for f in fs)


@pytest.mark.parametrize("text", [
    "Hey Mel! Good to see you! How have you been?", "Thanks, Caroline! That's awesome!", "lol", "ok cool",
    "What do you think about Lisbon?", "Can you summarize this article for me", "Summarize the plot of Hamlet.",
    "Good luck with the move!", "Wow, that sounds great, Jon!", "Take care, talk soon!",
])
def test_questions_greetings_requests_and_reactions_give_nothing(ex, text):
    assert facts(ex, text) == []


def test_a_sentence_the_rules_cannot_use_is_kept_as_said(ex):
    fs = facts(ex, "Thanks, Caroline! The transgender stories were so inspiring. What about you?", "Melanie")
    assert [(f.text, f.kind, f.attributed_to) for f in fs] == \
        [("Melanie: The transgender stories were so inspiring", "said", "Melanie")]
    # a kept sentence stays as said (the memory names the speaker), and a shared image is remembered too
    fs = facts(ex, "Her name is Shadow! She always puts a smile on my face. [shares an image: a photo of a dog]",
               "Maria")
    assert [f.text for f in fs] == ["Maria: Her name is Shadow. She always puts a smile on my face",
                                    "Maria shared a photo of a dog"]


def test_kept_sentences_do_not_turn_hedges_into_facts(ex):
    assert facts(ex, "I think I'm going to quit my job.") == []
    (kept,) = facts(ex, "I think it's important to stand up for veterans.")
    assert kept.text == "Alice: I think it's important to stand up for veterans" and detect_slot(kept.text) is None


def _pairs() -> list[tuple[str, str, bool]]:
    out = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            old, new, want = (p.strip() for p in line.split("|||"))
            out.append((old, new, want == "yes"))
    return out


def test_casual_change_cues_supersede_the_old_slot_holder(tmp_path):
    pairs = _pairs()
    assert len(pairs) >= 25 and sum(w for *_, w in pairs) >= 15 and sum(not w for *_, w in pairs) >= 5
    wrong = []
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        for n, (old, new, want) in enumerate(pairs):
            user = f"u{n}"
            before = m.add([{"role": "user", "content": old, "name": "Alice"}], user_id=user,
                           timestamp="2024-01-10T10:00")["results"]
            assert before, old
            after = m.add([{"role": "user", "content": new, "name": "Alice"}], user_id=user,
                          timestamp="2024-06-12T10:00")["results"]
            assert after or not want, new                       # a change itself is remembered
            status = {r["id"]: r["status"] for r in m.get_all(user_id=user, include_superseded=True,
                                                               show_expired=True)["results"]}
            if any(status.get(r["id"]) == "superseded" for r in before) != want:
                wrong.append((old, new, want))
    assert wrong == []


def test_add_with_the_default_extractor_stores_and_finds_a_third_person_fact(tmp_path):
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        out = m.add("Alice keeps three beehives on her roof", user_id="alice")
        assert out["extraction"]["status"] == "ok" and out["results"]
        hits = m.search("how many beehives does Alice keep", user_id="alice")["results"]
        assert "beehives" in hits[0]["memory"]
        assert m.add("Thanks, that helps!", user_id="alice")["results"] == []
