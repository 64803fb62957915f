"""Filters compile to SQL through sqlglot; user values are parameters; scope can never widen."""
from __future__ import annotations

import pytest

from memstore.core.errors import FilterError, IdentityError

HOSTILE = ["'; DROP TABLE memories; --", "x' OR '1'='1", "\" OR 1=1 --", "$f0", "alice\\", "🙂' --"]


@pytest.fixture
def populated(memory):
    rows = [("alice", "Alice likes tea", {"topic": "food", "stars": 5, "tags": "hot,drink"}),
            ("alice", "Alice runs marathons", {"topic": "sport", "stars": 3}),
            ("alice", "Alice reads sci-fi", {"topic": "books", "stars": 4, "note": HOSTILE[0]}),
            ("bob", "Bob likes tea", {"topic": "food", "stars": 5}),
            ("bob", "Bob reads sci-fi", {"topic": "books", "stars": 1})]
    for user, text, meta in rows:
        memory.add(text, user_id=user, infer=False, metadata=meta)
    return memory


def texts(m, filters, query="tea sport books"):
    return sorted(r["memory"] for r in m.search(query, filters=filters, top_k=50)["results"])


@pytest.mark.parametrize("spec,expected", [
    ({"topic": "food"}, ["Alice likes tea"]),
    ({"topic": {"eq": "food"}}, ["Alice likes tea"]),
    ({"topic": {"ne": "food"}}, ["Alice reads sci-fi", "Alice runs marathons"]),
    ({"topic": {"in": ["food", "sport"]}}, ["Alice likes tea", "Alice runs marathons"]),
    ({"topic": {"nin": ["food", "sport"]}}, ["Alice reads sci-fi"]),
    ({"stars": {"gt": 3}}, ["Alice likes tea", "Alice reads sci-fi"]),
    ({"stars": {"gte": 4}}, ["Alice likes tea", "Alice reads sci-fi"]),
    ({"stars": {"lt": 4}}, ["Alice runs marathons"]),
    ({"stars": {"lte": 3}}, ["Alice runs marathons"]),
    ({"tags": {"contains": "drink"}}, ["Alice likes tea"]),
    ({"tags": {"icontains": "DRINK"}}, ["Alice likes tea"]),
    ({"OR": [{"topic": "food"}, {"topic": "sport"}]}, ["Alice likes tea", "Alice runs marathons"]),
    ({"AND": [{"stars": {"gte": 3}}, {"topic": {"ne": "books"}}]}, ["Alice likes tea", "Alice runs marathons"]),
    ({"NOT": {"topic": "food"}}, ["Alice reads sci-fi", "Alice runs marathons"]),
])
def test_operators(populated, spec, expected):
    assert texts(populated, {"user_id": "alice", **spec}) == expected
    assert sorted(r["memory"] for r in populated.get_all(filters={"user_id": "alice", **spec})["results"]) == expected


def test_or_and_not_cannot_escape_the_scope(populated):
    for spec in ({"OR": [{"user_id": "bob"}, {"topic": "food"}]},
                 {"NOT": {"user_id": "alice"}},
                 {"OR": [{"user_id": {"ne": "alice"}}, {"stars": {"gte": 0}}]}):
        got = populated.search("tea sci-fi", filters={"user_id": "alice", **spec}, top_k=50)["results"]
        assert all(r["user_id"] == "alice" for r in got)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_plain_data(populated, value):
    assert texts(populated, {"user_id": value}) == []
    assert texts(populated, {"user_id": "alice", "note": value}) == (
        ["Alice reads sci-fi"] if value == HOSTILE[0] else [])
    assert populated.db.scalar("SELECT count(*) FROM memories") == 5


def test_unknown_operator_and_bad_shapes_are_clear_errors(populated):
    with pytest.raises(FilterError, match="unknown filter operator 'like'"):
        populated.search("tea", filters={"user_id": "alice", "topic": {"like": "f%"}})
    with pytest.raises(FilterError, match="needs a list"):
        populated.search("tea", filters={"user_id": "alice", "topic": {"in": "food"}})
    with pytest.raises(FilterError, match="identity"):
        populated.search("tea", filters={"topic": "food"})
    with pytest.raises(FilterError, match="identity"):
        populated.search("tea", filters={"OR": [{"user_id": "alice"}]})


def test_identity_is_trimmed_on_read_as_on_write(memory):
    memory.add("Carol keeps bees", user_id=" carol ", infer=False)
    for uid in ("carol", " carol", "carol\t", {"eq": " carol "}):
        assert texts(memory, {"user_id": uid}, "bees") == ["Carol keeps bees"]
        assert [r["memory"] for r in memory.get_all(filters={"user_id": uid})["results"]] == ["Carol keeps bees"]
    with pytest.raises(IdentityError, match="user_id is empty"):     # the one scope rule (core/scope_rule.py)
        memory.search("bees", filters={"user_id": "   "})
