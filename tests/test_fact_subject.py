"""A fact stored with no named speaker is attributed to the person it names first (issue 32): with
`add(fact, infer=False)` and a user id that is no name, every memory was "User", so the person
signal (a query naming the memory's person) could never help on the public-API path."""
from __future__ import annotations

import warnings

import pytest

from memstore import Memory


@pytest.fixture()
def mem(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    yield m
    m.close()


def _attributed(m: Memory, user_id: str) -> dict[str, str]:
    return {r["memory"]: r["attributed_to"] for r in m.get_all(user_id=user_id)["results"]}


def test_a_bare_fact_is_attributed_to_the_name_it_opens_with(mem):
    for text in ("Melanie painted a horse last week.", "Melanie's son got hurt on the road trip.",
                 "Painting helps Melanie relax.", "I love sushi.", "The support group made Caroline feel accepted."):
        mem.add(text, user_id="conv-26", infer=False)
    assert _attributed(mem, "conv-26") == {
        "Melanie painted a horse last week.": "Melanie",
        "Melanie's son got hurt on the road trip.": "Melanie",
        "Painting helps Melanie relax.": "User",             # a common noun first: no one's
        "I love sushi.": "User",
        "The support group made Caroline feel accepted.": "User",
    }


def test_a_named_speaker_is_kept(mem):
    mem.add("Melanie painted a horse.", user_id="alice", infer=False)
    mem.add([{"role": "user", "content": "Melanie painted a horse.", "name": "Bob"}], user_id="conv-1", infer=False)
    assert _attributed(mem, "alice") == {"Melanie painted a horse.": "Alice"}
    assert _attributed(mem, "conv-1") == {"Melanie painted a horse.": "Bob"}


def test_adds_prepared_together_are_attributed_as_one_by_one(mem):
    texts = ["Melanie painted a horse.", "Caroline went to a pride parade."]
    ready = mem.prepare_models([mem.prepare_add(t, user_id="conv-2", infer=False, models=False) for t in texts])
    mem.commit_prepared(ready)
    assert _attributed(mem, "conv-2") == {"Melanie painted a horse.": "Melanie",
                                          "Caroline went to a pride parade.": "Caroline"}


def test_the_person_signal_finds_the_fact_about_the_person_asked_about(mem):
    for text in ("Melanie painted a horse.", "Caroline painted a sunset."):
        mem.add(text, user_id="conv-3", infer=False)
    res = mem.search("What did Melanie paint?", user_id="conv-3", explain=True)["results"]
    person = {r["memory"]: r["explain"]["person"] for r in res}
    assert person == {"Melanie painted a horse.": 1.0, "Caroline painted a sunset.": 0.0}
