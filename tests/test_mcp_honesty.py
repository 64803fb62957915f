"""What the MCP Inspector (the official MCP client) found: an add_memory that stores nothing said
it succeeded, forget_me reported "not verified" because memstore's own view comments held the
user's city, and unknown tool arguments were dropped silently."""
from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from memstore.store.views import ensure_views
from tests.test_mcp_tools import _run


def test_add_memory_that_stores_nothing_is_an_error(memory):
    res = _run(memory, {"user_id": "alice"}, [
        ("add_memory", {"text": "hmm"}),                                   # no fact in it
        ("add_memory", {"text": "I live in Lisbon"}),
        ("add_memory", {"text": "I live in Lisbon"}),                      # already stored: said, not an error
    ])
    err, text = res[0]
    assert err and "nothing was stored" in text and "NothingStoredError" in text
    assert not res[1][0] and res[1][1]["results"][0]["event"] == "ADD"
    assert not res[2][0] and res[2][1]["results"] == [] and "already stored" in res[2][1]["message"]


def test_unknown_tool_arguments_are_refused(memory):
    res = _run(memory, {"user_id": "alice"}, [("list_entities", {"foo": "bar"}), ("list_memories", {"foo": "bar"}),
                                              ("search_memories", {"query": "x", "limitt": 3})])
    for err, text in res:
        assert err and "does not take" in text
    assert "limitt" in res[2][1] and "limit" in res[2][1].split("arguments are")[1]


def test_forget_me_is_verified_when_the_user_shares_words_with_view_comments(memory):
    memory.add("I live in Boston and work in Seattle", user_id="alice", infer=False)
    memory.add("Alice collects contradictions", user_id="alice", infer=False)   # a word of a view's comment
    memory.add("Bob plays chess", user_id="bob", infer=False)
    ensure_views(memory.db)                     # the views (and their comments) are in the file
    res = _run(memory, {"user_id": "alice"}, [("forget_me", {"confirm": True})])
    assert not res[0][0] and res[0][1]["verified"] is True, res
    assert "unverified_receipts" not in str(memory.doctor()), memory.doctor()


def test_stored_view_sql_holds_no_example_data():
    import pathlib

    for f in pathlib.Path(__file__).resolve().parents[1].joinpath("sql", "views").glob("*.sql"):
        text = f.read_text()
        for word in ("Boston", "Seattle", "'alice'", "Tom"):
            assert word not in text, (f.name, word)
