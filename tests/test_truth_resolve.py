"""Contradictions view and resolve(): a person's decision, one transaction, recorded with the actor;
bad requests get clear errors and change nothing."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.core.errors import IdentityError, NotFoundError, StoreWriteError
from memstore.governance.resolve import ResolveError


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    # slot supersession off: conflicts stay in place for a person to decide
    mem = Memory(str(tmp_path_factory.mktemp("res") / "r.duckdb"), config={"slot_supersession": "off"})
    yield mem
    mem.close()


def conflict(m: Memory, user: str) -> tuple[str, str]:
    """(older id, newer id) of a lives_in conflict for `user`."""
    old = m.add("I live in Boston", user_id=user, timestamp="2023-01-01")["results"][0]["id"]
    new = m.add("I live in Seattle", user_id=user, timestamp="2023-06-01")["results"][0]["id"]
    return old, new


def test_contradictions_are_per_scope_and_need_one(m):
    conflict(m, "amy")
    m.add("I live in Rome", user_id="bea", timestamp="2023-01-01")
    c = m.contradictions(user_id="amy")
    assert c.select("kind", "subject", "slot", "reason").rows() == \
        [("same_slot", "amy", "lives_in", "same subject and slot lives_in: boston vs seattle")]
    assert set(c["user_id"]) == {"amy"}
    assert m.contradictions(user_id="bea").is_empty()
    with pytest.raises(IdentityError):
        m.contradictions()


def test_resolve_keeps_newer_and_records_the_actor(m):
    old, new = conflict(m, "cy")
    out = m.resolve(new, supersede=[old], actor_id="moderator")
    assert (out["kept"], out["superseded"]) == (new, [old])
    assert m.contradictions(user_id="cy").is_empty()
    got = m.get(old)
    assert (got["status"], got["superseded_by"], got["invalidated_at"]) == ("superseded", new, "2023-06-01T00:00:00")
    assert [(e["event"], e["actor_id"], e["new_memory"]) for e in m.history(old)] == \
        [("ADD", None, "Cy lives in Boston"), ("RESOLVE", "moderator", "Cy lives in Seattle")]
    assert [(e["event"], e["actor_id"]) for e in m.history(new)] == [("ADD", None), ("RESOLVE", "moderator")]
    assert m.db.rows("l", {"d": old}, sql="SELECT src_id, kind FROM memory_links WHERE dst_id = $d") == \
        [(new, "supersedes")]
    assert {r["memory"] for r in m.get_all(user_id="cy", as_of="2023-03-01")["results"]} == {"Cy lives in Boston"}


def test_keeping_the_older_fact_means_the_newer_was_never_true(m):
    old, new = conflict(m, "dee")
    m.resolve(old, supersede=new, actor_id="dee")
    got = m.get(new)
    assert got["invalidated_at"] == got["valid_from"] == "2023-06-01T00:00:00"
    for day in ("2023-03-01", "2023-07-01"):
        assert {r["memory"] for r in m.get_all(user_id="dee", as_of=day)["results"]} == {"Dee lives in Boston"}


def test_dismiss_marks_a_pair_compatible(m):
    old, new = conflict(m, "eli")
    out = m.resolve(new, dismiss=[old], actor_id="eli")
    assert out["dismissed"] == [old]
    assert m.contradictions(user_id="eli").is_empty()
    assert {r["memory"] for r in m.get_all(user_id="eli")["results"]} == {"Eli lives in Boston", "Eli lives in Seattle"}
    assert [e["event"] for e in m.history(old)] == ["ADD", "RESOLVE"]


def test_resolve_is_one_transaction(m):
    old, new = conflict(m, "flo")
    m.db.faults.add("write:history")
    try:
        with pytest.raises(StoreWriteError):
            m.resolve(new, supersede=[old])
    finally:
        m.db.faults.clear()
    assert m.get(old)["status"] == "current"
    assert m.db.scalar("SELECT count(*) FROM memory_links WHERE dst_id = ?", [old]) == 0
    assert len(m.contradictions(user_id="flo")) == 1


def test_bad_requests_say_what_and_change_nothing(m):
    old, new = conflict(m, "gil")
    other = m.add("I live in Oslo", user_id="hal")["results"][0]["id"]
    with pytest.raises(NotFoundError, match="nope"):
        m.resolve(new, supersede=["nope"])
    with pytest.raises(ResolveError, match="nothing to resolve"):
        m.resolve(new)
    with pytest.raises(ResolveError, match="given twice"):
        m.resolve(new, supersede=[new])
    with pytest.raises(ResolveError, match="another scope"):
        m.resolve(new, supersede=[other])
    with pytest.raises(ResolveError, match="list of memory ids"):
        m.resolve(new, supersede=[1])
    m.resolve(new, supersede=[old])
    with pytest.raises(ResolveError, match="already superseded"):
        m.resolve(old, supersede=[new])
    assert m.get(other)["status"] == "current" and m.get(new)["status"] == "current"
    assert [e["event"] for e in m.history(other)] == ["ADD"]


def test_similar_but_different_facts_are_candidates(m):
    m.add("I am allergic to peanuts", user_id="ivy", timestamp="2023-01-01")
    m.add("I am not allergic to peanuts", user_id="ivy", timestamp="2023-02-01")
    m.add("I love sailing", user_id="ivy")
    c = m.contradictions(user_id="ivy")
    assert c.select("kind", "older_memory", "newer_memory").rows() == \
        [("similar", "Ivy is allergic to peanuts", "Ivy is not allergic to peanuts")]
    assert c["similarity"][0] >= 0.9 and c["reason"][0].startswith("similar (0.")
