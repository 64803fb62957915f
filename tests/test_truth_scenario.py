"""Truth over time, end to end through the public API: a scripted five-session conversation with
six kinds of change (move, job change, relationship, diet, name change, a retracted plan), run
once with the offline heuristic extractor and once through the LLM path (the real openai client
against ScriptedOpenAIServer, whose answers name superseded memories by the short ids the prompt
showed). Checks current answers, as_of answers, the history chain, and contradictions before and
after a person resolves them."""
from __future__ import annotations

import json
import re

from memstore import Memory

SESSIONS = [
    ("2023-01-10T10:00", "Hi, my name is Alice Smith. I live in Boston and I work at Google. I'm vegetarian."),
    ("2023-03-05T10:00", "I'm dating Bob. I'm planning to move to Denver. I'm allergic to peanuts."),
    ("2023-05-20T10:00", "I moved to Seattle. I'm no longer planning to move to Denver."),
    ("2023-07-01T10:00", "I just started a new job at Microsoft. I broke up with Bob. "
                         "I work at a bakery on weekends too."),
    ("2023-09-15T10:00", "I eat meat again. I changed my name to Alice Jones. I'm not allergic to peanuts."),
]

# What the scripted "LLM" answers per session: (fact, regex over stored memories it supersedes).
# It deliberately misses two supersessions (diet, allergy): the contradictions view must catch them.
LLM_FACTS = {
    "my name is Alice Smith": [("Alice's name is Alice Smith", None), ("Alice lives in Boston", None),
                               ("Alice works at Google", None), ("Alice is vegetarian", None)],
    "I'm dating Bob": [("Alice is dating Bob", None), ("Alice is planning to move to Denver", None),
                       ("Alice is allergic to peanuts", None)],
    "I moved to Seattle": [("Alice moved to Seattle", r"lives in Boston"),
                           ("Alice is no longer planning to move to Denver", r"planning to move to Denver")],
    "new job at Microsoft": [("Alice started a new job at Microsoft", r"works at Google"),
                             ("Alice broke up with Bob", r"dating Bob"),
                             ("Alice works at a bakery on weekends too", None)],
    "I eat meat again": [("Alice eats meat again", None),
                         ("Alice changed her name to Alice Jones", r"name is Alice Smith"),
                         ("Alice is not allergic to peanuts", None)],
}


ALLERGY = ("similar", frozenset(("Alice is allergic to peanuts", "Alice is not allergic to peanuts")))
BAKERY_HEURISTIC = ("same_slot", frozenset(("Alice just started a new job at Microsoft",
                                            "Alice works at a bakery on weekends too")))
BAKERY_LLM = ("same_slot", frozenset(("Alice started a new job at Microsoft",
                                      "Alice works at a bakery on weekends too")))


def scripted_llm(seen_prompts: list[str]):
    """A chat_responder playing the LLM: reads the stored memories' short ids from the prompt."""
    def respond(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        seen_prompts.append(prompt)
        stored = dict(re.findall(r"^(m\d+): (.+)$", prompt.split("Earlier messages")[0].split("New messages")[0], re.M))
        new = prompt.split("New messages:", 1)[1]
        for key, facts in LLM_FACTS.items():
            if key in new:
                return json.dumps({"facts": [
                    {"text": text, "attributed_to": "Alice", "linked_memory_ids": [],
                     "supersedes": [sid for sid, mem in stored.items() if pattern and re.search(pattern, mem)]}
                    for text, pattern in facts]})
        return json.dumps({"facts": []})
    return respond


def run_conversation(m: Memory) -> None:
    for ts, text in SESSIONS:
        m.add([{"role": "user", "content": text, "name": "Alice"}], user_id="alice", timestamp=ts)


def texts(results: list[dict]) -> list[str]:
    return [r["memory"] for r in results]


def find(m: Memory, pattern: str, **kw) -> dict:
    hits = [r for r in m.get_all(user_id="alice", include_superseded=True, show_expired=True)["results"]
            if re.search(pattern, r["memory"])]
    assert len(hits) == 1, f"{pattern!r} matched {texts(hits)}"
    return hits[0]


def current_slot(m: Memory, pattern: str, **kw) -> list[str]:
    return [t for t in texts(m.get_all(user_id="alice", **kw)["results"]) if re.search(pattern, t)]


def check_truth(m: Memory) -> None:
    """Assertions shared by both extractor paths (before contradictions are resolved)."""
    # -- current answers: exactly the newest fact of each changed attribute
    assert current_slot(m, r"lives in|moved to") == ["Alice moved to Seattle"]
    assert current_slot(m, r"Google|Microsoft") == [t for t in current_slot(m, r"Microsoft")]
    assert len(current_slot(m, r"Microsoft")) == 1
    assert current_slot(m, r"Bob") == ["Alice broke up with Bob"]
    assert current_slot(m, r"Denver") == ["Alice is no longer planning to move to Denver"]
    assert current_slot(m, r"name") and all("Alice Jones" in t for t in current_slot(m, r"name"))
    hits = m.search("Where does Alice live?", user_id="alice", top_k=5)["results"]
    assert hits[0]["memory"] == "Alice moved to Seattle"
    assert not any("Boston" in r["memory"] for r in hits)          # superseded never competes by default
    assert all(r["status"] == "current" for r in hits)

    # -- include_superseded: everything, with its status
    every = {r["memory"]: r["status"] for r in m.search("Where does Alice live?", user_id="alice", top_k=50,
                                                         include_superseded=True)["results"]}
    assert every["Alice lives in Boston"] == "superseded" and every["Alice moved to Seattle"] == "current"

    # -- as_of: what was current then
    feb = texts(m.get_all(user_id="alice", as_of="2023-02-01")["results"])
    assert "Alice lives in Boston" in feb and "Alice works at Google" in feb and "Alice is vegetarian" in feb
    assert not any("Bob" in t or "Seattle" in t for t in feb)
    apr = texts(m.get_all(user_id="alice", as_of="2023-04-01")["results"])
    assert {"Alice lives in Boston", "Alice is dating Bob", "Alice is planning to move to Denver"} <= set(apr)
    jun = current_slot(m, r"Bob|Denver|Boston|Seattle|Google|Microsoft", as_of="2023-06-01")
    assert sorted(jun) == sorted(["Alice is dating Bob", "Alice is no longer planning to move to Denver",
                                  "Alice moved to Seattle", "Alice works at Google"])
    assert m.search("Where does Alice live?", user_id="alice", as_of="2023-04-01")["results"][0]["memory"] \
        == "Alice lives in Boston"

    # -- history chain: Boston was superseded by Seattle at Seattle's conversation time, same add
    boston, seattle = find(m, r"lives in Boston"), find(m, r"moved to Seattle")
    assert boston["superseded_by"] == seattle["id"] and boston["status"] == "superseded"
    assert boston["invalidated_at"] == seattle["valid_from"] == "2023-05-20T10:00:00"
    assert boston["valid_from"] == "2023-01-10T10:00:00"
    events = m.history(boston["id"])
    assert [e["event"] for e in events] == ["ADD", "SUPERSEDE"]
    assert events[1]["old_memory"] == "Alice lives in Boston" and events[1]["new_memory"] == "Alice moved to Seattle"
    links = m.db.rows("links", {"dst": boston["id"]},
                      sql="SELECT src_id, kind FROM memory_links WHERE dst_id = $dst")
    assert links == [(seattle["id"], "supersedes")]
    name_chain = find(m, r"name is Alice Smith")
    assert find(m, r"Alice Jones")["id"] == name_chain["superseded_by"]

    # -- timeline: every fact, one interval each, ordered by valid_from
    tl = m.timeline(user_id="alice")
    assert tl["valid_from"].is_sorted()
    row = tl.filter(tl["id"] == boston["id"]).row(0, named=True)
    assert (row["status"], row["valid_to"].isoformat(), row["superseded_by_memory"]) == \
        ("superseded", "2023-05-20T10:00:00", "Alice moved to Seattle")
    assert tl.filter(tl["status"] == "current").height == len(m.get_all(user_id="alice")["results"])


def resolve_all(m: Memory, expected: set[tuple[str, frozenset]]) -> None:
    """Contradictions before / after a person resolves them (recorded with the actor)."""
    c = m.contradictions(user_id="alice")
    pairs = {frozenset((r["older_memory"], r["newer_memory"])): r for r in c.iter_rows(named=True)}
    assert {(r["kind"], p) for p, r in pairs.items()} == expected
    allergy = pairs[frozenset(("Alice is allergic to peanuts", "Alice is not allergic to peanuts"))]
    assert allergy["newer_memory"] == "Alice is not allergic to peanuts" and allergy["reason"].startswith("similar")
    bakery = next(r for r in pairs.values() if "bakery" in r["older_memory"] + r["newer_memory"])
    assert bakery["slot"] == "works_at" and "microsoft" in bakery["reason"] and "bakery" in bakery["reason"]

    out = m.resolve(allergy["newer_id"], supersede=[allergy["older_id"]], actor_id="carol")
    assert out["superseded"] == [allergy["older_id"]]
    m.resolve(bakery["older_id"], dismiss=[bakery["newer_id"]], actor_id="carol")   # both true: compatible
    for r in c.filter(c["kind"] == "same_slot").iter_rows(named=True):
        if r["slot"] == "diet":
            m.resolve(r["newer_id"], supersede=[r["older_id"]], actor_id="carol")

    assert m.contradictions(user_id="alice").is_empty()
    old = m.get(allergy["older_id"])
    assert old["status"] == "superseded" and old["superseded_by"] == allergy["newer_id"]
    assert old["invalidated_at"] == "2023-09-15T10:00:00"
    ev = m.history(allergy["older_id"])
    assert [(e["event"], e["actor_id"]) for e in ev] == [("ADD", None), ("RESOLVE", "carol")]
    assert ev[1]["new_memory"] == "Alice is not allergic to peanuts"
    assert [e["event"] for e in m.history(allergy["newer_id"])] == ["ADD", "RESOLVE"]
    # after the resolve, only the kept facts are current; the bakery job stays current too
    now = texts(m.get_all(user_id="alice")["results"])
    assert "Alice is allergic to peanuts" not in now and "Alice is not allergic to peanuts" in now
    assert "Alice works at a bakery on weekends too" in now
    assert not any("vegetarian" in t for t in now)
    # and as_of before the resolved change still answers the past
    assert "Alice is allergic to peanuts" in texts(m.get_all(user_id="alice", as_of="2023-08-01")["results"])


def test_scenario_offline_heuristic_extractor(memory):
    m = memory
    run_conversation(m)
    check_truth(m)
    assert current_slot(m, r"vegetarian|meat") == ["Alice eats meat again"]
    resolve_all(m, {ALLERGY, BAKERY_HEURISTIC})


def test_scenario_llm_path(llm_server, llm_memory):
    prompts: list[str] = []
    llm_server.chat_responder = scripted_llm(prompts)
    m = llm_memory
    run_conversation(m)
    assert llm_server.chat_calls == len(SESSIONS)
    # the LLM saw the stored memory under a short id, and that id was mapped back
    assert re.search(r"^m\d+: Alice lives in Boston$", prompts[2], re.M)
    check_truth(m)
    # the LLM missed the diet change: both stay current until a person decides
    assert sorted(current_slot(m, r"vegetarian|meat")) == ["Alice eats meat again", "Alice is vegetarian"]
    resolve_all(m, {ALLERGY, BAKERY_LLM, ("same_slot", frozenset(("Alice is vegetarian", "Alice eats meat again")))})
    assert current_slot(m, r"vegetarian|meat") == ["Alice eats meat again"]
