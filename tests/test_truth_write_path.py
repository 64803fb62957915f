"""Supersession on the write path: same transaction as the add, time order respected, scopes and
subjects kept apart, and the `slot_supersession` switch."""
from __future__ import annotations

import json

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError, StoreWriteError
from memstore.testing.openai_server import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    mem = Memory(str(tmp_path_factory.mktemp("truth") / "w.duckdb"))
    yield mem
    mem.close()


def by_text(m: Memory, user: str) -> dict[str, dict]:
    return {r["memory"]: r for r in m.get_all(user_id=user, include_superseded=True, show_expired=True)["results"]}


def current(m: Memory, user: str, **kw) -> set[str]:
    return {r["memory"] for r in m.get_all(user_id=user, **kw)["results"]}


def test_supersession_rolls_back_with_the_add(m):
    m.add("I live in Boston", user_id="una", timestamp="2023-01-01")
    m.db.faults.add("write:supersede_memories")
    try:
        with pytest.raises(StoreWriteError):
            m.add("I moved to Seattle", user_id="una", timestamp="2023-05-01")
    finally:
        m.db.faults.clear()
    assert current(m, "una") == {"Una lives in Boston"}
    rows = by_text(m, "una")
    assert len(rows) == 1 and next(iter(rows.values()))["status"] == "current"
    assert m.db.scalar("SELECT count(*) FROM memory_links WHERE kind = 'supersedes' AND user_id = 'una'") == 0
    assert m.db.scalar("SELECT count(*) FROM history WHERE event = 'SUPERSEDE' AND user_id = 'una'") == 0
    out = m.add("I moved to Seattle", user_id="una", timestamp="2023-05-01")    # retry succeeds
    assert [r["event"] for r in out["results"]] == ["ADD", "SUPERSEDE"]
    assert current(m, "una") == {"Una moved to Seattle"}


def test_late_fact_is_stored_already_superseded(m):
    m.add("I live in Portland", user_id="bob", timestamp="2023-05-01")
    out = m.add("I live in Boston", user_id="bob", timestamp="2023-01-01")      # an older conversation, added late
    assert [r["event"] for r in out["results"]] == ["ADD"]
    rows = by_text(m, "bob")
    boston, portland = rows["Bob lives in Boston"], rows["Bob lives in Portland"]
    assert current(m, "bob") == {"Bob lives in Portland"}
    assert boston["superseded_by"] == portland["id"]
    assert (boston["valid_from"], boston["invalidated_at"]) == ("2023-01-01T00:00:00", "2023-05-01T00:00:00")
    assert current(m, "bob", as_of="2023-02-01") == {"Bob lives in Boston"}
    assert [e["event"] for e in m.history(boston["id"])] == ["ADD", "SUPERSEDE"]
    assert m.db.rows("l", {"d": boston["id"]}, sql="SELECT src_id, kind FROM memory_links WHERE dst_id = $d") \
        == [(portland["id"], "supersedes")]
    assert m.contradictions(user_id="bob").is_empty()


def test_one_add_with_several_times_chains_the_facts(m):
    m.add("I live in Austin", user_id="carl", timestamp="2022-01-01")
    m.add([{"role": "user", "content": "I moved to Seattle", "created_at": "2023-06-01"},
           {"role": "user", "content": "I live in Boston", "created_at": "2023-01-01"}], user_id="carl")
    rows = by_text(m, "carl")
    austin, boston, seattle = (rows[f"Carl {t}"] for t in ("lives in Austin", "lives in Boston", "moved to Seattle"))
    assert current(m, "carl") == {"Carl moved to Seattle"}
    assert austin["superseded_by"] == boston["id"] and boston["superseded_by"] == seattle["id"]
    # contiguous intervals: each ends where the next begins
    assert austin["invalidated_at"] == boston["valid_from"] == "2023-01-01T00:00:00"
    assert boston["invalidated_at"] == seattle["valid_from"] == "2023-06-01T00:00:00"
    for day, want in (("2022-06-01", "Austin"), ("2023-03-01", "Boston"), ("2023-07-01", "Seattle")):
        assert [t for t in current(m, "carl", as_of=day)] == [next(k for k in rows if want in k)]


def test_other_subjects_slots_scopes_and_additions_stay_current(m):
    m.add("I live in Boston and I work at Google", user_id="dana", timestamp="2023-01-01")
    m.add("I live in Rome", user_id="erin", timestamp="2023-02-01")                 # another scope
    m.add("My sister lives in Paris. I work at a bakery on weekends too.", user_id="dana", timestamp="2023-03-01")
    assert current(m, "dana") == {"Dana lives in Boston", "Dana works at Google", "Dana's sister lives in Paris",
                                  "Dana works at a bakery on weekends too"}
    assert current(m, "erin") == {"Erin lives in Rome"}


def test_raw_messages_supersede_on_the_speakers_slot(m):
    m.add("I live in Boston", user_id="max", infer=False, timestamp="2023-01-01")
    m.add("I moved to Seattle", user_id="max", infer=False, timestamp="2023-05-01")
    assert current(m, "max") == {"I moved to Seattle"}
    assert m.timeline(user_id="max")["subject"].to_list() == ["max", "max"]


def test_restating_a_superseded_fact_makes_it_current_again(m):
    m.add("I live in Boston", user_id="fay", timestamp="2023-01-01")
    m.add("I moved to Seattle", user_id="fay", timestamp="2023-02-01")
    out = m.add("I live in Boston", user_id="fay", timestamp="2023-03-01")
    assert [r["event"] for r in out["results"]] == ["ADD", "SUPERSEDE"]
    assert current(m, "fay") == {"Fay lives in Boston"}
    assert len(m.timeline(user_id="fay")) == 3


def test_a_negated_fact_is_not_a_duplicate_of_its_opposite(m):
    """'is allergic' / 'is not allergic' embed at ~0.98 cosine, above the dedupe threshold."""
    m.add("I am allergic to peanuts", user_id="jon")
    out = m.add("I am not allergic to peanuts", user_id="jon")
    assert [r["event"] for r in out["results"]] == ["ADD"]
    assert m.add("I am not allergic to peanuts!", user_id="jon")["results"] == []     # a real duplicate still is
    assert current(m, "jon") == {"Jon is allergic to peanuts", "Jon is not allergic to peanuts"}


def test_an_edited_memory_is_judged_by_its_new_text(m):
    mid = m.add("I live in Boston", user_id="kim", timestamp="2023-01-01")["results"][0]["id"]
    m.update(mid, "Kim loves jazz")
    m.add("I moved to Seattle", user_id="kim", timestamp="2023-05-01")
    assert current(m, "kim") == {"Kim loves jazz", "Kim moved to Seattle"}
    other = m.add("I live in Oslo", user_id="kim", timestamp="2023-06-01")["results"]
    assert [r["memory"] for r in other if r["event"] == "SUPERSEDE"] == ["Kim moved to Seattle"]


def test_slot_supersession_off_keeps_both_and_flags_them(tmp_path):
    with Memory(str(tmp_path / "off.duckdb"), config={"slot_supersession": "off"}) as m:
        m.add("I live in Boston", user_id="gus", timestamp="2023-01-01")
        m.add("I moved to Seattle", user_id="gus", timestamp="2023-05-01")
        assert current(m, "gus") == {"Gus lives in Boston", "Gus moved to Seattle"}
        c = m.contradictions(user_id="gus")
        assert c.select("kind", "slot", "older_memory", "newer_memory").rows() == \
            [("same_slot", "lives_in", "Gus lives in Boston", "Gus moved to Seattle")]
        assert m.timeline(user_id="gus")["slot"].to_list() == ["lives_in", "lives_in"]


def test_config_rejects_an_unknown_mode():
    with pytest.raises(ConfigError, match="slot_supersession"):
        Memory.from_config({"slot_supersession": "sometimes"})


@pytest.mark.parametrize("mode,superseded", [("heuristic", False), ("always", True)])
def test_llm_path_slot_supersession_only_when_asked(tmp_path, mode, superseded):
    """Also: with history off, the supersession is still reported by add() and shown by timeline."""
    answers = iter([{"facts": [{"text": "Hal lives in Boston"}]}, {"facts": [{"text": "Hal moved to Seattle"}]}])
    with ScriptedOpenAIServer(chat_responder=lambda body: json.dumps(next(answers))) as srv, \
            Memory(str(tmp_path / "llm.duckdb"), config={
                "slot_supersession": mode, "history": "off",
                "llm": {"provider": "openai", "base_url": srv.base_url, "api_key": "t", "max_retries": 0}}) as m:
        m.add("I live in Boston", user_id="hal", timestamp="2023-01-01")
        out = m.add("I moved to Seattle", user_id="hal", timestamp="2023-05-01")
        want = {"Hal moved to Seattle"} if superseded else {"Hal lives in Boston", "Hal moved to Seattle"}
        assert current(m, "hal") == want
        assert [r["event"] for r in out["results"]] == (["ADD", "SUPERSEDE"] if superseded else ["ADD"])
        assert m.timeline(user_id="hal")["status"].to_list() == \
            (["superseded", "current"] if superseded else ["current", "current"])
        assert m.db.scalar("SELECT count(*) FROM history") == 0


def test_llm_supersedes_a_newer_fact_leaves_an_empty_interval(tmp_path):
    """An out-of-order LLM supersession never closes a fact before it began."""
    with ScriptedOpenAIServer() as srv, Memory(str(tmp_path / "o.duckdb"), config={
            "llm": {"provider": "openai", "base_url": srv.base_url, "api_key": "t", "max_retries": 0}}) as m:
        srv.push_chat(json.dumps({"facts": [{"text": "Ida lives in Seattle"}]}))
        m.add("I live in Seattle", user_id="ida", timestamp="2023-05-01")
        srv.push_chat(json.dumps({"facts": [{"text": "Ida lives in Boston", "supersedes": ["m1"]}]}))
        m.add("I live in Boston", user_id="ida", timestamp="2023-01-01")
        rows = by_text(m, "ida")
        seattle = rows["Ida lives in Seattle"]
        assert seattle["invalidated_at"] == seattle["valid_from"] == "2023-05-01T00:00:00"
        for day in ("2023-02-01", "2023-06-01"):
            assert current(m, "ida", as_of=day) == {"Ida lives in Boston"}


def test_a_late_fact_cuts_the_interval_it_falls_in(m):
    m.add("I live in Austin", user_id="lena", timestamp="2022-01-01")
    m.add("I live in Seattle", user_id="lena", timestamp="2023-06-01")
    m.add("I live in Boston", user_id="lena", timestamp="2023-01-01")       # told late, happened between
    rows = by_text(m, "lena")
    austin, boston, seattle = (rows[f"Lena lives in {c}"] for c in ("Austin", "Boston", "Seattle"))
    assert (austin["superseded_by"], austin["invalidated_at"]) == (boston["id"], "2023-01-01T00:00:00")
    assert (boston["superseded_by"], boston["invalidated_at"]) == (seattle["id"], "2023-06-01T00:00:00")
    for day, want in (("2022-06-01", "Austin"), ("2023-03-01", "Boston"), ("2023-07-01", "Seattle")):
        assert current(m, "lena", as_of=day) == {f"Lena lives in {want}"}
    m.add("I live in Denver", user_id="lena", timestamp="2021-01-01")       # older than everything
    denver = by_text(m, "lena")["Lena lives in Denver"]
    assert (denver["superseded_by"], denver["invalidated_at"]) == (austin["id"], "2022-01-01T00:00:00")
    assert current(m, "lena", as_of="2021-06-01") == {"Lena lives in Denver"}
    assert current(m, "lena", as_of="2022-06-01") == {"Lena lives in Austin"}


def test_deleting_the_middle_of_a_chain_passes_its_predecessor_on(m):
    m.add("I live in Austin", user_id="milo", timestamp="2022-01-01")
    m.add("I live in Boston", user_id="milo", timestamp="2023-01-01")
    m.add("I live in Seattle", user_id="milo", timestamp="2023-06-01")
    rows = by_text(m, "milo")
    austin, boston, seattle = (rows[f"Milo lives in {c}"] for c in ("Austin", "Boston", "Seattle"))
    m.delete(boston["id"])
    assert current(m, "milo") == {"Milo lives in Seattle"}                   # Austin is not revived
    after = by_text(m, "milo")["Milo lives in Austin"]
    assert (after["superseded_by"], after["invalidated_at"]) == (seattle["id"], "2023-06-01T00:00:00")
    assert current(m, "milo", as_of="2023-03-01") == {"Milo lives in Austin"}
    assert m.db.rows("l", {"d": austin["id"]}, sql="SELECT src_id FROM memory_links WHERE dst_id = $d "
                     "AND kind = 'supersedes'") == [(seattle["id"],)]
    m.delete(seattle["id"])                                                  # the last of the chain
    assert current(m, "milo") == {"Milo lives in Austin"}


def test_a_state_that_fulfils_a_plan_ends_it(m):
    m.add("I am moving to Seattle next month", user_id="noor", timestamp="2024-04-11")
    m.add("I am planning to learn Spanish", user_id="noor", timestamp="2024-04-11")
    out = m.add("I live in Denver now", user_id="noor", timestamp="2024-05-06")     # not the planned city
    assert [r["event"] for r in out["results"]] == ["ADD"]
    out = m.add("I live in Seattle now", user_id="noor", timestamp="2024-06-01")
    assert sorted(r["event"] for r in out["results"]) == ["ADD", "SUPERSEDE", "SUPERSEDE"]   # Denver and the plan
    assert current(m, "noor") == {"Noor lives in Seattle now", "Noor is planning to learn Spanish"}
    plan = by_text(m, "noor")["Noor is moving to Seattle next month"]
    assert plan["invalidated_at"] == "2024-06-01T00:00:00"
    assert current(m, "noor", as_of="2024-05-10") == {"Noor is moving to Seattle next month", "Noor lives in Denver now",
                                                       "Noor is planning to learn Spanish"}
    m.add("I am interviewing at Amazon for a data scientist role", user_id="noor", timestamp="2024-06-02")
    out = m.add("I work at Amazon now", user_id="noor", timestamp="2024-07-01")
    assert sorted(r["event"] for r in out["results"]) == ["ADD", "SUPERSEDE"]
    assert "Noor is interviewing at Amazon for a data scientist role" not in current(m, "noor")


def test_the_dashboard_chain_follows_the_same_slot_when_a_fact_replaced_two(m):
    from memstore.dashboard.data import supersession_chain
    m.add("I live in Boston", user_id="omar", timestamp="2024-01-01")
    m.add("I am moving to Seattle next month", user_id="omar", timestamp="2024-04-01")
    out = m.add("I moved to Seattle", user_id="omar", timestamp="2024-05-01")   # ends both
    assert sorted(r["event"] for r in out["results"]) == ["ADD", "SUPERSEDE", "SUPERSEDE"]
    seattle = by_text(m, "omar")["Omar moved to Seattle"]["id"]
    chain = supersession_chain(m, seattle, {"user_id": "omar"})
    assert chain["memory"].to_list() == ["Omar lives in Boston", "Omar moved to Seattle"]
