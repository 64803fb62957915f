"""The offline extractor keeps a reply that only makes sense with the question before it (issue 31):
joined with that question, attributed to the one who answered, citing both messages, whether the
question is in the same add, among the recent messages ingest passes, or asked by the assistant.
Replies that stand on their own, small talk, and a speaker answering themself are not joined.
Real spaCy pipeline, real stores."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from memstore import Memory
from memstore.core.model import Message
from memstore.extraction.extract_heuristic import HeuristicExtractor
from memstore.providers.nlp import shared_nlp

AT = dt.datetime(2024, 6, 12, 10)


@pytest.fixture(scope="module")
def ex() -> HeuristicExtractor:
    return HeuristicExtractor(shared_nlp())


def turn(who: str, text: str, n: int) -> Message:
    return Message("user", text, name=who, created_at=AT, id=f"m{n}")


def texts(ex: HeuristicExtractor, msgs: list[Message], recent: tuple[Message, ...] = ()) -> list:
    return [(f.text, f.kind, f.attributed_to, f.source_message_ids)
            for f in ex.extract(msgs, [], speaker="User", recent=recent).facts]


def test_a_short_reply_is_joined_with_the_question_it_answers(ex):
    out = texts(ex, [turn("Maria", "That's so moving! How did they react when they saw it?", 1),
                     turn("John", "They were awestruck and humbled.", 2)])
    assert out == [("Maria asked John: How did they react when they saw it? John: They were awestruck and humbled",
                    "said", "John", ["m1", "m2"])]


def test_an_answer_about_oneself_keeps_the_question_that_gives_its_topic(ex):
    asked = turn("Caroline", "Wow! What got you into running?", 1)
    out = texts(ex, [asked, turn("Melanie", "The doctor told me to move more.", 2)])
    assert out == [("Caroline asked Melanie: What got Melanie into running? Melanie: The doctor told me to move more",
                    "said", "Melanie", ["m1", "m2"])]
    # an answer the rules make a clean fact of needs no question
    out = texts(ex, [asked, turn("Melanie", "My sister signed us both up for a 5k.", 2)])
    assert [o[0] for o in out] == ["Melanie's sister signed Melanie and others both up for a 5k"]


def test_the_question_may_come_from_the_recent_messages(ex):
    asked = turn("Melanie", "I love how it shows the power you talked about. How long have you been creating art?", 1)
    out = texts(ex, [turn("Caroline", "Since I was 17 or so. I find it so empowering and cathartic.", 2)],
                recent=(turn("Caroline", "Here is my painting.", 0), asked))
    joined = [o for o in out if o[1] == "said"]
    assert joined == [("Melanie asked Caroline: How long has Caroline been creating art? Caroline: Since I was 17 "
                       "or so. I find it so empowering and cathartic", "said", "Caroline", ["m1", "m2"])]
    # without the question, the sentence alone is kept as said
    assert texts(ex, [turn("Caroline", "Since I was 17 or so.", 2)]) == \
        [("Caroline: Since I was 17 or so", "said", "Caroline", ["m2"])]


def test_yes_or_no_and_one_word_answers_keep_the_question(ex):
    q = Message("assistant", "Do you have any pets?", id="a1")
    out = texts(ex, [q, Message("user", "Yes! Two cats.", id="u1")])
    assert out == [("The assistant asked User: Does User have any pets? User: Yes. Two cats", "said", "User",
                    ["a1", "u1"])]
    out = texts(ex, [turn("Caroline", "Love that purple color! For walking or running?", 1),
                     turn("Melanie", "Running!", 2)])
    assert [o[0] for o in out] == ["Caroline asked Melanie: For walking or running? Melanie: Running"]


def test_a_reply_that_stands_on_its_own_is_not_joined(ex):
    out = texts(ex, [turn("Gina", "What's new?", 1), turn("Jon", "I adopted a cat last week.", 2)])
    assert out and all(o[3] == ["m2"] and "asked" not in o[0] for o in out), out


@pytest.mark.parametrize("before, reply", [
    ("The kids loved the beach.", "They were so happy."),                 # nothing was asked
    ("How about you?", "It was fine."),                                   # a question that asks nothing
    ("What did you think of the film?", "Thanks so much!"),               # small talk answers nothing
    ("How can I help with that?", "Explain compound interest simply"),    # a request is no answer
])
def test_no_question_or_no_answer_gives_no_joined_memory(ex, before, reply):
    out = texts(ex, [turn("Ann", before, 1), turn("Bea", reply, 2)])
    assert not any("asked" in o[0] for o in out), out


def test_a_speaker_does_not_answer_their_own_question(ex):
    out = texts(ex, [turn("Ann", "Guess what happened?", 1), turn("Ann", "It rained all week.", 2)])
    assert not any("asked" in o[0] for o in out), out


def test_add_with_the_default_extractor_stores_and_finds_the_joined_reply(tmp_path):
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        out = m.add([{"role": "assistant", "content": "Where did you grow up?"},
                     {"role": "user", "content": "Mostly in Porto, near the river."}], user_id="alice")
        assert [r["memory"] for r in out["results"]] == \
            ["The assistant asked Alice: Where did Alice grow up? Alice: Mostly in Porto, near the river"]
        hit = m.search("where did alice grow up", user_id="alice")["results"][0]
        assert "Porto" in hit["memory"] and hit["attributed_to"] == "Alice"


def test_ingest_joins_a_reply_with_the_question_in_the_previous_batch(tmp_path):
    path = tmp_path / "chat.jsonl"
    rows = [{"role": "user", "name": "Maria", "content": "Looks fun! What games did you all play?",
             "created_at": "2024-03-01T10:00", "id": "q"},
            {"role": "user", "name": "John", "content": "Some fun ones like charades and a scavenger hunt.",
             "created_at": "2024-03-01T10:01", "id": "a"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        m.ingest(str(path), user_id="u", batch_size=1, progress=False)      # the question is context only
        mems = m.frame("memories", user_id="u").select("memory", "attributed_to", "source_message_ids")
        msgs = m.frame("messages", user_id="u").select("id", "content")
        ids = dict(zip(msgs["content"].to_list(), msgs["id"].to_list()))
        assert mems.rows() == [("Maria asked John: What games did John all play? John: Some fun ones like charades "
                                "and a scavenger hunt", "John", [ids[rows[0]["content"]], ids[rows[1]["content"]]])]
