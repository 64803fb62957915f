"""add(): what it returns is exactly what was committed, in every table of a real DuckDB file."""
from __future__ import annotations

import json

import pytest

from memstore import IdentityError, Memory

TABLES = ("memories", "entities", "entity_postings", "keyword_postings", "memory_links", "history", "messages",
          "extraction_runs")


def counts(m: Memory) -> dict[str, int]:
    return {t: m.db.scalar(f'SELECT count(*) FROM "{t}"') for t in TABLES}


def runs(m: Memory) -> list[dict]:
    return m.db.dicts("test_runs", sql="SELECT * FROM extraction_runs ORDER BY created_at, id")


def test_add_returns_exactly_what_is_committed(memory):
    out = memory.add("I'm vegetarian and I live in Boston", user_id="alice")
    results = out["results"]
    assert sorted(r["memory"] for r in results) == ["Alice is vegetarian", "Alice lives in Boston"]
    assert all(r["event"] == "ADD" for r in results)

    stored = memory.get_all(user_id="alice")["results"]
    assert {(r["id"], r["memory"]) for r in stored} == {(r["id"], r["memory"]) for r in results}
    assert all(r["user_id"] == "alice" and r["attributed_to"] == "Alice" for r in stored)

    ids = sorted(r["id"] for r in results)
    c = counts(memory)
    assert c["memories"] == 2 and c["history"] == 2 and c["messages"] == 1 and c["extraction_runs"] == 1
    assert c["memory_links"] == 0  # the heuristic extractor proposes no links
    # every posting points at a committed memory; both memories have keyword postings; Boston is an entity
    assert sorted(r[0] for r in memory.db.rows("t", sql="SELECT DISTINCT memory_id FROM keyword_postings")) == ids
    assert {r[0] for r in memory.db.rows("t", sql="SELECT DISTINCT memory_id FROM entity_postings")} <= set(ids)
    boston = memory.db.rows("t", sql="SELECT p.memory_id FROM entity_postings p JOIN entities e ON e.id = p.entity_id "
                                     "WHERE e.norm = 'boston'")
    assert [r[0] for r in boston] == [next(r["id"] for r in results if "Boston" in r["memory"])]
    hist = memory.db.rows("t", sql="SELECT memory_id, event, new_memory, user_id FROM history ORDER BY memory_id")
    assert [(h[0], h[1], h[3]) for h in hist] == [(i, "ADD", "alice") for i in ids]
    assert {h[2] for h in hist} == {"Alice is vegetarian", "Alice lives in Boston"}

    run = runs(memory)[0]
    assert out["extraction"]["id"] == run["id"]
    assert (run["status"], run["extractor"], run["n_facts"], run["n_added"], run["n_deduplicated"]) == \
        ("ok", "heuristic", 2, 2, 0)
    msg_id = memory.db.scalar("SELECT id FROM messages")
    assert run["input_message_ids"] == [msg_id]
    assert all(memory.get(i)["source_message_ids"] == [msg_id] for i in ids)
    assert memory.db.scalar("SELECT count(DISTINCT extraction_run_id) FROM memories") == 1
    assert set(out["timings"]) >= {"context", "llm", "nlp", "embed", "dedupe", "build", "store", "total"}


def test_add_with_nothing_to_remember_still_saves_the_message(memory):
    out = memory.add("What time is it?", user_id="alice")
    assert out["results"] == [] and out["extraction"]["status"] == "empty"
    c = counts(memory)
    assert c["memories"] == 0 and c["messages"] == 1 and c["extraction_runs"] == 1
    assert runs(memory)[0]["status"] == "empty"


def test_infer_false_stores_each_message_with_speaker_prefixed_embedding(memory):
    msgs = [{"role": "user", "content": "I went to the support group yesterday", "name": "Caroline"},
            {"role": "assistant", "content": "That sounds meaningful."}]
    out = memory.add(msgs, user_id="caroline", infer=False, metadata={"session": 3})
    assert [r["memory"] for r in out["results"]] == [m["content"] for m in msgs]
    assert out["extraction"]["status"] == "ok"
    assert runs(memory)[0]["extractor"] == "none"
    by_text = {r["memory"]: r for r in memory.get_all(user_id="caroline")["results"]}
    assert by_text[msgs[0]["content"]]["attributed_to"] == "Caroline"
    assert by_text[msgs[0]["content"]]["role"] == "user"
    assert by_text[msgs[1]["content"]]["role"] == "assistant"
    assert all(r["metadata"] == {"session": 3} for r in by_text.values())

    # The stored vector is the embedding of "Caroline: <text>", not of the bare text.
    emb = memory._rt.embedder
    for r in out["results"]:
        stored = memory.db.arrow("t", {"id": r["id"]}, sql="SELECT embedding FROM memories WHERE id = $id")
        vec = stored.column(0).to_pylist()[0]
        who = "Caroline" if r["memory"] == msgs[0]["content"] else "assistant"
        prefixed = emb.embed([f"{who}: {r['memory']}"])[0]
        bare = emb.embed([r["memory"]])[0]
        # (int8 ONNX embeddings vary slightly with batch composition, hence "closer", not "equal")
        to_prefixed, to_bare = (sum(a * b for a, b in zip(vec, other)) for other in (prefixed, bare))
        assert to_prefixed > 0.95 and to_prefixed > to_bare + 0.01


def test_messages_are_pruned_to_the_newest_ten_by_default(memory):
    memory.add([{"role": "user", "content": f"turn {i}"} for i in range(7)], user_id="alice", infer=False)
    memory.add([{"role": "user", "content": f"turn {i}"} for i in range(7, 12)], user_id="alice", infer=False)
    memory.add("turn for bob", user_id="bob", infer=False)
    kept = [r[0] for r in memory.db.rows("t", sql="SELECT content FROM messages WHERE user_id = 'alice'")]
    assert sorted(kept, key=lambda s: int(s.split()[1])) == [f"turn {i}" for i in range(2, 12)]
    assert memory.db.scalar("SELECT count(*) FROM messages WHERE user_id = 'bob'") == 1  # pruning is per scope
    assert memory.db.scalar("SELECT count(*) FROM memories WHERE user_id = 'alice'") == 12  # memories are not pruned


def test_messages_kept_is_configurable(store_path):
    with Memory(store_path, config={"messages_kept": 3}) as m:
        m.add([{"role": "user", "content": f"turn {i}"} for i in range(5)], user_id="alice", infer=False)
        assert sorted(r[0] for r in m.db.rows("t", sql="SELECT content FROM messages")) == ["turn 2", "turn 3",
                                                                                            "turn 4"]
    with Memory(store_path, config={"messages_kept": None}) as m:
        m.add([{"role": "user", "content": f"more {i}"} for i in range(15)], user_id="alice", infer=False)
        assert m.db.scalar("SELECT count(*) FROM messages") == 18


def test_same_fact_twice_is_deduplicated_against_the_whole_scope(memory):
    first = memory.add("I live in Boston", user_id="alice")
    assert [r["memory"] for r in first["results"]] == ["Alice lives in Boston"]
    # many other memories in between: dedupe is by hash over the whole scope, not top-k neighbours
    memory.add([{"role": "user", "content": f"note number {i} about topic {i * 7}"} for i in range(30)],
               user_id="alice", infer=False)
    before = counts(memory)
    second = memory.add("I live in Boston.", user_id="alice")
    assert second["results"] == []
    assert second["extraction"]["deduplicated"] == 1 and second["extraction"]["status"] == "ok"
    after = counts(memory)
    assert after["memories"] == before["memories"] and after["history"] == before["history"]
    assert after["keyword_postings"] == before["keyword_postings"]
    run = runs(memory)[-1]
    assert (run["n_facts"], run["n_added"], run["n_deduplicated"]) == (1, 0, 1)
    assert json.loads(run["facts"])[0]["outcome"] == "duplicate"


def test_duplicate_within_one_batch_is_stored_once(memory):
    out = memory.add([{"role": "user", "content": "same words"}, {"role": "user", "content": "Same words."}],
                     user_id="alice", infer=False)
    # one memory; the repeat is listed as NONE (its source recorded: tests/test_raw_add.py)
    assert [r["event"] for r in out["results"]] == ["ADD", "NONE"] and out["extraction"]["deduplicated"] == 1
    assert memory.db.scalar("SELECT count(*) FROM memories") == 1
    assert memory.db.scalar("SELECT count(*) FROM messages") == 2


def test_other_user_with_same_text_is_not_deduplicated(memory):
    a = memory.add("I live in Boston", user_id="alice")
    b = memory.add("I live in Boston", user_id="bob", infer=False)
    c = memory.add("I live in Boston", user_id="alice", agent_id="planner", infer=False)
    assert len(a["results"]) == len(b["results"]) == len(c["results"]) == 1
    assert memory.db.scalar("SELECT count(DISTINCT scope_key) FROM memories") == 3
    assert [r["memory"] for r in memory.get_all(user_id="bob")["results"]] == ["I live in Boston"]


def test_missing_identity_is_rejected_and_nothing_is_written(memory):
    before = counts(memory)
    with pytest.raises(IdentityError, match="user_id"):
        memory.add("I like tea")
    with pytest.raises(IdentityError, match="user_id is empty"):
        memory.add("I like tea", user_id="  ")
    assert counts(memory) == before


@pytest.mark.parametrize("key", ["user_id", "agent_id", "run_id", "actor_id"])
def test_identity_in_metadata_is_rejected_and_nothing_is_written(memory, key):
    memory.add("I like tea", user_id="alice")
    before = counts(memory)
    with pytest.raises(IdentityError, match=key) as err:
        memory.add("I like coffee", user_id="alice", metadata={key: "mallory", "topic": "drinks"})
    assert key in err.value.fields["keys"]
    assert "user_id=" in str(err.value)  # says what to do instead
    assert counts(memory) == before
    assert memory.get_all(user_id="mallory")["results"] == []


def test_add_rejects_unknown_arguments_and_bad_messages(memory):
    with pytest.raises(TypeError, match="filters"):
        memory.add("I like tea", user_id="alice", filters={"user_id": "alice"})
    with pytest.raises(ValueError, match="message #1 has no 'content'"):
        memory.add([{"role": "user", "content": "ok"}, {"role": "user"}], user_id="alice")
    assert counts(memory)["messages"] == 0


def test_timestamp_sets_valid_from_and_message_time(memory):
    out = memory.add("I live in Boston", user_id="alice", timestamp="2023-05-01T10:00:00")
    rec = memory.get(out["results"][0]["id"])
    assert rec["valid_from"].startswith("2023-05-01T10:00")
    assert str(memory.db.scalar("SELECT created_at FROM messages")).startswith("2023-05-01 10:00")


@pytest.mark.parametrize("said, stored", [
    ("I also work at Acme", "Alice also works at Acme"),
    ("I usually go hiking on weekends", "Alice usually goes hiking on weekends"),
    ("I never drink coffee", "Alice never drinks coffee"),
    ("I really don't like olives", "Alice really doesn't like olives"),
    ("I still play the violin", "Alice still plays the violin"),
    ("I can swim", "Alice can swim"),
])
def test_offline_extractor_conjugates_past_adverbs(memory, said, stored):
    out = memory.add(said, user_id="alice")
    assert [r["memory"] for r in out["results"] if r["event"] == "ADD"] == [stored]


@pytest.mark.parametrize("said, stored", [
    ("We cancelled our trip to Peru", ["Alice and others cancelled their trip to Peru"]),
    ("We're expecting a baby in June", ["Alice and others are expecting a baby in June"]),
    ("Our daughter Mia started school", ["Alice's daughter Mia started school"]),
    ("My wife and I are vegan", ["Alice's wife and Alice are vegan"]),
    ("Tom and I went hiking", ["Tom and Alice went hiking"]),
    ("I live in Boston and I work at Acme", ["Alice lives in Boston", "Alice works at Acme"]),
    ("I ran and I swam", ["Alice ran", "Alice swam"]),
])
def test_offline_extractor_handles_we_coordinated_subjects_and_past_forms(memory, said, stored):
    out = memory.add(said, user_id="alice")
    assert [r["memory"] for r in out["results"] if r["event"] == "ADD"] == stored
