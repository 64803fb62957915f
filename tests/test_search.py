"""Hybrid retrieval: three channels, SQL fusion, explain, reranker, incremental keyword index."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from memstore import Memory

FACTS = [
    "Alice is vegetarian",
    "Alice lives in Boston",
    "Alice's sister Carol works at Google",
    "Alice loves hiking in the White Mountains",
    "Alice plays the cello in a community orchestra",
    "Alice adopted a greyhound named Biscuit",
]


def _store(m: Memory, user: str = "alice", facts=FACTS) -> dict[str, str]:
    out = {}
    for f in facts:
        for r in m.add(f, user_id=user, infer=False)["results"]:
            out[r["memory"]] = r["id"]
    return out


def test_semantic_search_ranks_the_right_fact_first(memory):
    _store(memory)
    res = memory.search("what does alice eat?", filters={"user_id": "alice"})["results"]
    assert res[0]["memory"] == "Alice is vegetarian"
    res = memory.search("which dog does she have", filters={"user_id": "alice"})["results"]
    assert res[0]["memory"] == "Alice adopted a greyhound named Biscuit"


def test_keyword_match_outside_the_semantic_top_n_is_recalled(store_path):
    # 40 memories about food crowd the semantic top-3; the one with the exact rare word is not among them.
    m = Memory(store_path, config={"search": {"candidate_k": 3}})
    filler = [f"Alice enjoyed a delicious dinner of pasta number {i} at an Italian restaurant" for i in range(40)]
    _store(m, facts=filler + ["Alice's locker code is zanzibar"])
    q = "delicious Italian dinner zanzibar"
    sem = m.search(q, filters={"user_id": "alice"}, channels=("semantic",), top_k=10)["results"]
    assert "Alice's locker code is zanzibar" not in [r["memory"] for r in sem]
    fused = m.search(q, filters={"user_id": "alice"}, top_k=10, explain=True)["results"]
    hit = [r for r in fused if r["memory"] == "Alice's locker code is zanzibar"]
    assert hit and "keyword" in hit[0]["explain"]["channels"] and "semantic" not in hit[0]["explain"]["channels"]
    m.close()


def test_entity_channel_recalls_memories_naming_the_entity(memory):
    _store(memory)
    res = memory.search("Carol", filters={"user_id": "alice"}, channels=("entity",), explain=True)["results"]
    assert [r["memory"] for r in res] == ["Alice's sister Carol works at Google"]
    assert res[0]["explain"]["entity"] > 0.5


def test_hub_entities_are_damped(memory):
    _store(memory)
    frame = memory.explain_search("Alice Biscuit", user_id="alice")
    ent = dict(zip(frame["memory"], frame["entity"]))
    # "alice" is linked to every memory (a hub); "biscuit" to one
    assert ent["Alice adopted a greyhound named Biscuit"] > 0.8
    others = [v for k, v in ent.items() if k != "Alice adopted a greyhound named Biscuit"]
    assert others and max(others) < 0.2


def test_fused_score_is_a_fixed_weighted_mean_in_unit_range(memory):
    _store(memory)
    w = memory.config.search
    for query, asks_slot in (("Carol Google", False), ("where does alice live", True)):
        w_slot = w.w_slot if asks_slot else 0.0   # the slot weight depends on the query only
        total = w.w_semantic + w.w_keyword + w.w_entity + w.w_recency + w_slot + w.w_person + w.w_episode
        res = memory.search(query, filters={"user_id": "alice"}, explain=True)["results"]
        assert res
        for r in res:
            e = r["explain"]
            for signal in ("semantic", "keyword", "entity", "recency", "slot", "person", "episode", "score"):
                assert 0.0 <= e[signal] <= 1.0
            # a keyword match counts times the semantic match (the semantic channel is on)
            expected = (w.w_semantic * e["semantic"] + w.w_keyword * e["keyword"] * e["semantic"]
                        + w.w_entity * e["entity"]
                        + w.w_recency * e["recency"] + w_slot * e["slot"] + w.w_person * e["person"]
                        + w.w_episode * e["episode"]) / total
            assert r["score"] == pytest.approx(expected, abs=1e-9)
    top = memory.search("where does alice live", filters={"user_id": "alice"}, explain=True)["results"][0]
    assert top["memory"] == "Alice lives in Boston" and top["explain"]["slot"] == 1.0


def test_threshold_drops_low_scores(memory):
    _store(memory)
    every = memory.search("cello orchestra", filters={"user_id": "alice"})["results"]
    kept = memory.search("cello orchestra", filters={"user_id": "alice"}, threshold=0.3)["results"]
    assert all(r["score"] >= 0.3 for r in kept)
    assert 0 < len(kept) < len(every)


def test_keyword_index_is_incremental_and_deletes_are_final(store_path):
    m = Memory(store_path)
    ids = _store(m)
    q = "greyhound"
    res = m.search(q, filters={"user_id": "alice"}, channels=("keyword",))["results"]
    assert [r["memory"] for r in res] == ["Alice adopted a greyhound named Biscuit"]
    m.add("Alice walks the greyhound every morning", user_id="alice", infer=False)
    res = m.search(q, filters={"user_id": "alice"}, channels=("keyword",))["results"]
    assert len(res) == 2
    m.delete(ids["Alice adopted a greyhound named Biscuit"])
    m.close()
    code = ("from memstore import Memory; import sys; m = Memory(sys.argv[1]); "
            "print('|'.join(r['memory'] for r in m.search('greyhound', filters={'user_id': 'alice'}, "
            "channels=('keyword', 'entity'))['results']))")
    out = subprocess.run([sys.executable, "-c", code, store_path], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Alice walks the greyhound every morning"


def test_bm25_statistics_are_per_scope(memory):
    _store(memory)
    before = memory.explain_search("cello orchestra", user_id="alice").filter(
        memory.explain_search("cello orchestra", user_id="alice")["keyword"] > 0)
    # bob's many cello memories must not change alice's keyword scores
    _store(memory, user="bob", facts=[f"Bob repairs cello number {i}" for i in range(30)])
    after = memory.explain_search("cello orchestra", user_id="alice")
    b = dict(zip(before["id"], before["bm25"]))
    a = dict(zip(after["id"], after["bm25"]))
    assert b and all(a[k] == pytest.approx(v) for k, v in b.items())
    assert set(after["id"]) <= set(memory.get_all(user_id="alice")["results"][i]["id"]
                                   for i in range(len(FACTS)))


def test_explain_search_frame_holds_every_candidate(memory):
    _store(memory)
    frame = memory.explain_search("Carol", user_id="alice")
    assert {"rank", "id", "memory", "status", "semantic", "keyword", "bm25", "entity", "recency", "score",
            "by_semantic", "by_keyword", "by_entity"} <= set(frame.columns)
    assert frame.height == len(FACTS)  # the semantic channel recalls the whole (small) scope
    assert frame["score"].is_sorted(descending=True)


def test_reranker_reorders_and_its_failure_keeps_fused_order(memory):
    _store(memory)
    fused = memory.search("Alice", filters={"user_id": "alice"})["results"]
    memory.reranker = lambda q, rs: [len(r["memory"]) for r in rs]   # longest first
    rr = memory.search("Alice", filters={"user_id": "alice"}, rerank=True)["results"]
    assert [r["memory"] for r in rr] == sorted((r["memory"] for r in fused), key=len, reverse=True)

    def broken(q, rs):
        raise TimeoutError("reranker endpoint down")
    memory.reranker = broken
    with pytest.warns(RuntimeWarning, match="reranker failed"):
        rr = memory.search("Alice", filters={"user_id": "alice"}, rerank=True)["results"]
    assert [r["id"] for r in rr] == [r["id"] for r in fused]


def test_search_needs_identity_and_a_query(memory):
    from memstore.core.errors import FilterError, MemstoreError
    with pytest.raises(FilterError, match="identity"):
        memory.search("anything")
    with pytest.raises(MemstoreError, match="empty"):
        memory.search("  ", user_id="alice")
    with pytest.raises(MemstoreError, match="channel"):
        memory.search("x", user_id="alice", channels=("telepathy",))


def test_superseded_status_shows_in_explain(llm_memory, llm_server):
    import json
    llm_server.push_chat(json.dumps({"facts": [{"text": "Alice lives in Boston"}]}))
    old = llm_memory.add("I live in Boston", user_id="alice")["results"][0]["id"]

    def answer(req):
        prompt = req["messages"][-1]["content"]
        short = next(line.split(":")[0] for line in prompt.splitlines() if "Alice lives in Boston" in line)
        return json.dumps({"facts": [{"text": "Alice lives in Seattle", "supersedes": [short]}]})
    llm_server.chat_responder = answer
    llm_memory.add("I moved to Seattle", user_id="alice")
    cur = llm_memory.search("where does alice live", user_id="alice", explain=True)["results"]
    assert [r["memory"] for r in cur] == ["Alice lives in Seattle"]
    every = llm_memory.search("where does alice live", user_id="alice", explain=True,
                              include_superseded=True)["results"]
    status = {r["memory"]: r["explain"]["status"] for r in every}
    assert status == {"Alice lives in Seattle": "current", "Alice lives in Boston": "superseded"}
    assert llm_memory.get(old)["superseded_by"] == cur[0]["id"]


def test_search_all_spans_scopes_and_matches_exact_scan(memory):
    _store(memory)
    _store(memory, user="bob", facts=["Bob lives in Paris", "Bob is allergic to peanuts"])
    ann = memory.search_all("who lives in Paris", top_k=3)["results"]
    exact = memory.search_all("who lives in Paris", top_k=3, exact=True)["results"]
    assert ann[0]["memory"] == exact[0]["memory"] == "Bob lives in Paris"
    assert {r["user_id"] for r in ann} == {"alice", "bob"}
    only_bob = memory.search_all("lives", top_k=5, where={"user_id": "bob"})["results"]
    assert {r["user_id"] for r in only_bob} == {"bob"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.add("Alice bought a red kayak", user_id="alice", infer=False)  # index maintained on write
    assert memory.search_all("red kayak", top_k=1)["results"][0]["memory"] == "Alice bought a red kayak"


def test_search_arguments_are_validated_with_clear_errors(memory):
    from memstore.core.errors import MemstoreError
    _store(memory)
    for bad in (0, -1, 10**9, 2.5, True):
        with pytest.raises(MemstoreError, match="top_k must be an integer"):
            memory.search("Alice", user_id="alice", top_k=bad)
    for bad in (-0.5, float("nan"), float("inf"), "high"):
        with pytest.raises(MemstoreError, match="must be a finite number >= 0"):
            memory.search("Alice", user_id="alice", weights={"keyword": bad})
    with pytest.raises(MemstoreError, match="empty"):
        memory.explain_search("", user_id="alice")
    assert len(memory.search("Alice", user_id="alice", top_k=1)["results"]) == 1


def test_channel_order_does_not_change_scores(memory):
    _store(memory)
    q = "where does alice live?"          # a slot question: the slot signal is on for all three channels
    a = memory.search(q, user_id="alice", explain=True)["results"]
    b = memory.search(q, user_id="alice", channels=("entity", "keyword", "semantic"), explain=True)["results"]
    assert [(r["id"], r["score"]) for r in a] == [(r["id"], r["score"]) for r in b]
    assert a[0]["memory"] == "Alice lives in Boston" and a[0]["explain"]["slot"] == 1.0


def test_identity_arguments_are_trimmed_like_filters(memory):
    _store(memory)
    assert memory.search("Boston", user_id=" alice ", filters={"user_id": "alice"})["results"]
    assert memory.frame("memories", user_id=" alice ").height == len(FACTS)


def test_episode_signal_marks_memories_from_the_best_matchs_conversation(memory):
    for text, when in (("Alice adopted a greyhound named Biscuit", "2024-01-01T10:00"),
                       ("Alice bought a red leash", "2024-01-01T10:40"),       # same conversation
                       ("Alice bought a blue leash", "2024-03-05T10:00")):     # another one
        memory.add(text, user_id="alice", infer=False, timestamp=when)
    f = memory.explain_search("which greyhound did alice adopt, and which leash?", user_id="alice")
    episode = dict(zip(f["memory"], f["episode"]))
    assert f["memory"][0] == "Alice adopted a greyhound named Biscuit"
    assert episode == {"Alice adopted a greyhound named Biscuit": 1.0, "Alice bought a red leash": 1.0,
                       "Alice bought a blue leash": 0.0}
    red, blue = (f.filter(f["memory"] == f"Alice bought a {c} leash").row(0, named=True) for c in ("red", "blue"))
    w = memory.config.search
    total = w.w_semantic + w.w_keyword + w.w_entity + w.w_recency + w.w_person + w.w_episode
    assert red["score"] - blue["score"] == pytest.approx(
        (w.w_semantic * (red["semantic"] - blue["semantic"])
         + w.w_keyword * (red["keyword"] * red["semantic"] - blue["keyword"] * blue["semantic"])
         + w.w_entity * (red["entity"] - blue["entity"]) + w.w_episode) / total, abs=1e-9)
    off = memory.explain_search("which greyhound did alice adopt, and which leash?", user_id="alice",
                                channels=("semantic",))
    assert off["score"].to_list() == off["semantic"].to_list()   # one channel: its own signal only


def test_without_timestamps_the_episode_is_the_add_call(memory):
    """Sessions imported one after another without timestamps are seconds apart: the episode is
    the best match's add() call, not everything stored within episode_minutes of it."""
    memory.add([{"role": "user", "content": t} for t in ("Alice adopted a greyhound named Biscuit",
                                                         "Alice bought a red leash")], user_id="alice", infer=False)
    memory.add("Alice bought a blue leash", user_id="alice", infer=False)          # another session
    f = memory.explain_search("which greyhound did alice adopt, and which leash?", user_id="alice")
    episode = dict(zip(f["memory"], f["episode"]))
    assert f["memory"][0] == "Alice adopted a greyhound named Biscuit"
    assert episode == {"Alice adopted a greyhound named Biscuit": 1.0, "Alice bought a red leash": 1.0,
                       "Alice bought a blue leash": 0.0}


def test_semantic_signal_reads_a_memory_with_its_conversation(store_path):
    """semantic = cosine with the memory's vector plus its add() call's mean vector; alone in its
    add() call a memory keeps its own cosine, and conversation_smoothing=0 turns it off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on = Memory(store_path, config={"embedder": {"provider": "hashing"}})
    on.add([{"role": "user", "content": t} for t in ("We drove to the coast", "The waves were huge")],
           user_id="alice", infer=False)
    on.add("Alice plays the cello", user_id="alice", infer=False)
    got = on.explain_search("waves at the coast", user_id="alice")
    on.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        off = Memory(store_path, config={"embedder": {"provider": "hashing"},
                                         "search": {"conversation_smoothing": 0}})
    raw = off.explain_search("waves at the coast", user_id="alice")
    off.close()
    a, b = (dict(zip(f["memory"], f["semantic"])) for f in (got, raw))
    assert a["Alice plays the cello"] == b["Alice plays the cello"]              # alone in its add() call
    # "We drove to the coast" is read with "The waves were huge": it gains what its own words lack
    assert a["We drove to the coast"] > b["We drove to the coast"]
    assert all(0.0 <= v <= 1.0 for v in a.values())


def test_person_signal_prefers_memories_of_the_person_the_query_names(memory):
    for name, where in (("Caroline", "mountains"), ("Melanie", "hills")):
        memory.add([{"role": "user", "content": f"I love hiking in the {where}", "name": name}],
                   user_id="chat", infer=False)
    res = memory.search("What does Caroline's family love?", user_id="chat", explain=True)["results"]
    by_person = {r["attributed_to"]: r["explain"]["person"] for r in res}
    assert by_person == {"Caroline": 1.0, "Melanie": 0.0}
    assert res[0]["attributed_to"] == "Caroline"
    plain = memory.search("What does the family love?", user_id="chat", explain=True)["results"]
    assert {r["explain"]["person"] for r in plain} == {0.0}
