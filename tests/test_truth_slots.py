"""Slot detection (memstore/core/rules/slots.py): which subject + slot a short fact states.
Golden table: fact → (subject, slot, value); None where no slot must be detected."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core.rules.slots import SlotMatch, detect_slot, is_negated, plan_key, question_slot, slot_reranker

GOLDEN = [
    # moves
    ("Alice lives in Boston", ("alice", "lives_in", "boston")),
    ("Alice moved to Seattle last week", ("alice", "lives_in", "seattle")),
    ("Alice relocated to Paris in May", ("alice", "lives_in", "paris")),
    ("Alice now lives in Austin", ("alice", "lives_in", "austin")),
    ("Alice lives in New York City with Bob", ("alice", "lives_in", "new york city")),
    ("Alice doesn't live in Boston anymore", ("alice", "lives_in", None)),
    ("Alice's sister lives in Paris", ("alice's sister", "lives_in", "paris")),
    ("Alice Smith lives in Boston", ("alice smith", "lives_in", "boston")),
    # jobs
    ("Alice works at Google", ("alice", "works_at", "google")),
    ("Alice just started a new job at Microsoft", ("alice", "works_at", "microsoft")),
    ("Alice works for the New York Times as an editor", ("alice", "works_at", "new york times")),
    ("Alice got a job at Amazon", ("alice", "works_at", "amazon")),
    ("Alice joined Stripe as a designer", ("alice", "works_at", "stripe")),
    ("Alice quit her job at Google", ("alice", "works_at", None)),
    ("Alice left Google", ("alice", "works_at", None)),
    ("Alice is unemployed", ("alice", "works_at", "unemployed")),   # a state a new job replaces
    ("Alice is a software engineer", ("alice", "occupation", "software engineer")),
    ("Alice became a teacher", ("alice", "occupation", "teacher")),
    ("Alice works as a nurse", ("alice", "occupation", "nurse")),
    # relationships
    ("Alice is dating Bob", ("alice", "relationship", "bob")),
    ("Alice broke up with Bob", ("alice", "relationship", None)),
    ("Alice got married to Bob", ("alice", "relationship", "bob")),
    ("Alice's girlfriend is Carol", ("alice", "relationship", "carol")),
    ("Alice is single now", ("alice", "relationship", "single")),   # a state a new partner replaces
    ("Alice is engaged to Tom", ("alice", "relationship", "tom")),
    ("Alice divorced Tom", ("alice", "relationship", None)),
    # diet
    ("Alice is vegetarian", ("alice", "diet", "vegetarian")),
    ("Alice is a vegetarian", ("alice", "diet", "vegetarian")),
    ("Alice is vegan now", ("alice", "diet", "vegan")),
    ("Alice eats meat again", ("alice", "diet", "eats meat")),
    ("Alice stopped eating meat", ("alice", "diet", "no meat")),
    ("Alice is no longer vegetarian", ("alice", "diet", "not vegetarian")),
    ("Alice is on a keto diet", ("alice", "diet", "keto")),
    # names
    ("Alice's name is Alice Smith", ("alice", "name", "alice smith")),
    ("Alice changed her name to Alice Jones", ("alice", "name", "alice jones")),
    ("Alice changed Alice's name to Alice Jones", ("alice", "name", "alice jones")),
    ("Alice goes by Ali", ("alice", "name", "ali")),
    # plans and their retraction share one slot per action
    ("Alice is planning to move to Denver", ("alice", "plan:move to denver", "planned")),
    ("Alice is thinking about moving to Denver", ("alice", "plan:move to denver", "planned")),
    ("Alice is going to move to Denver", ("alice", "plan:move to denver", "planned")),
    ("Alice is no longer planning to move to Denver", ("alice", "plan:move to denver", "cancelled")),
    ("Alice cancelled her plan to move to Denver", ("alice", "plan:move to denver", "cancelled")),
    ("Alice decided not to move to Denver", ("alice", "plan:move to denver", "cancelled")),
    ("Alice plans to visit Japan in May", ("alice", "plan:visit japan", "planned")),
    ("Alice no longer plans to visit Japan", ("alice", "plan:visit japan", "cancelled")),
    ("Alice is planning a trip to Japan in October", ("alice", "plan:trip to japan", "planned")),
    ("Alice cancelled the Japan trip", ("alice", "plan:trip to japan", "cancelled")),
    ("Alice is moving to Seattle next month", ("alice", "plan:move to seattle", "planned")),
    ("Alice is interviewing at Amazon for a data scientist role", ("alice", "plan:interview at amazon", "planned")),
    ("Alice called off her trip to Japan", ("alice", "plan:trip to japan", "cancelled")),
    # favourites
    ("Alice's favorite color is blue", ("alice", "favorite:color", "blue")),
    # no slot
    ("Alice likes jazz", None),
    ("Alice is a fan of jazz", None),
    ("Alice has a dog named Rex", None),
    ("Alice is going to the gym", None),
    ("Where does Alice live?", None),
    ("", None),
]


@pytest.mark.parametrize("text,expected", GOLDEN, ids=[g[0] or "empty" for g in GOLDEN])
def test_golden(text, expected):
    m = detect_slot(text)
    assert (None if m is None else (m.subject, m.slot, m.value)) == expected


def test_plan_and_retraction_share_a_slot_but_other_plans_do_not():
    plan = detect_slot("Alice is planning to move to Denver")
    assert detect_slot("Alice is no longer planning to move to Denver").slot == plan.slot
    assert detect_slot("Alice is planning to move to Austin").slot != plan.slot
    assert plan_key("moving to Denver next spring") == plan_key("move to Denver") == "move to denver"


def test_first_person_subject_resolves_to_the_speaker():
    assert detect_slot("I live in Boston", speaker="Bob") == SlotMatch("bob", "lives_in", "boston")
    assert detect_slot("I live in Boston").subject == "i"


def test_additions_are_marked_additive():
    assert detect_slot("Alice also works at a bakery on weekends").additive
    assert detect_slot("Alice works at a bakery on weekends too").additive
    assert not detect_slot("Alice works at a bakery").additive


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_never_raises_on_any_text(text):
    m = detect_slot(text)
    assert m is None or (m.subject and m.slot)


@pytest.mark.parametrize("question,slot", [
    ("Where does Alice live?", "lives_in"), ("Which city is Alice based in?", "lives_in"),
    ("Where does Alice work?", "works_at"), ("Who is Alice's employer?", "works_at"),
    ("What does Alice do for a living?", "occupation"), ("What is Alice's job?", "occupation"),
    ("Who is Alice dating?", "relationship"), ("Is Alice married?", "relationship"),
    ("Is Alice vegetarian?", "diet"), ("What does Alice eat?", "diet"),
    ("What is Alice's last name?", "name"), ("Is Alice planning to move to Denver?", "plan"),
    ("What is Alice's favorite color?", "favorite"), ("Does Alice like jazz?", None)])
def test_question_slot(question, slot):
    assert question_slot(question) == slot


def test_slot_reranker_puts_the_asked_slot_first_and_keeps_fused_order_otherwise():
    results = [{"memory": "Alice loves jazz", "score": 0.9}, {"memory": "Alice joined Stripe", "score": 0.3},
               {"memory": "Alice moved to Oslo", "score": 0.5}]
    scores = slot_reranker("Where does Alice work?", results)
    assert sorted(range(3), key=lambda i: -scores[i]) == [1, 0, 2]
    assert slot_reranker("Does Alice like jazz?", results) == [0.9, 0.3, 0.5]


def test_negation():
    assert is_negated("Alice is no longer vegetarian") and is_negated("Alice doesn't eat meat")
    assert not is_negated("Alice is vegetarian") and not is_negated("Alice knows Nora")
