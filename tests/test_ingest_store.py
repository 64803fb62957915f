"""m.ingest on a real store with the offline defaults: every message is stored once with its source,
every memory traces back to the messages it came from, re-running adds nothing, and changes of fact
are applied oldest first even though exports list conversations newest first."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import memstore
from memstore import Memory

DEMO = Path(memstore.__file__).resolve().parent.parent / "data" / "demo"
ALICE = DEMO / "chatgpt" / "alice" / "conversations.json"
BOB = DEMO / "claude" / "bob" / "conversations.json"
TABLES = ("memories", "messages", "extraction_runs", "history", "memory_links", "entity_postings",
          "keyword_postings", "ingest_log")


def counts(m: Memory) -> dict[str, int]:
    return {t: m.db.scalar(f"SELECT count(*) FROM {t}") for t in TABLES}


@pytest.fixture(scope="module")
def alice_store(tmp_path_factory):
    m = Memory(str(tmp_path_factory.mktemp("ingest") / "s.duckdb"))
    report = m.ingest(ALICE, user_id="alice")
    yield m, report
    m.close()


def test_report_accounts_for_every_message(alice_store):
    m, r = alice_store
    raw = json.loads(ALICE.read_text(encoding="utf-8"))
    n_nodes = sum(1 for c in raw for n in c["mapping"].values() if n["message"])
    assert r.status == "done" and r.balanced()
    assert r.messages["read"] == n_nodes
    assert r.messages["stored"] == 202 and r.messages["ignored"] == n_nodes - 202
    assert r.conversations["read"] == r.conversations["ingested"] == 25
    assert sum(r.extraction_runs.values()) == m.db.scalar("SELECT count(*) FROM extraction_runs")
    assert r.memories["added"] == m.db.scalar("SELECT count(*) FROM memories")
    assert set(r.stages_s) >= {"read", "extract", "analyze", "embed", "write", "total"}
    row = m.db.dicts("x", sql="SELECT status, report FROM ingest_runs WHERE id = ?", params=[r.ingest_id])[0]
    assert row["status"] == "done" and json.loads(row["report"])["messages"]["stored"] == 202


def test_every_stored_message_keeps_its_source(alice_store):
    m, _ = alice_store
    raw = json.loads(ALICE.read_text(encoding="utf-8"))
    source_ids = {(c["id"], n["message"]["id"]) for c in raw for n in c["mapping"].values() if n["message"]}
    rows = m.db.rows("x", sql="SELECT source_file, source_conversation, source_message_id, created_at FROM messages")
    assert len(rows) == 202
    assert {r[0] for r in rows} == {str(ALICE)}
    assert {(r[1], r[2]) for r in rows} <= source_ids
    assert len({(r[1], r[2]) for r in rows}) == 202          # no duplicates
    assert all(r[3].year == 2024 for r in rows)             # the export's times, not the ingest time


def test_every_memory_traces_back_to_its_messages_and_run(alice_store):
    m, _ = alice_store
    rows = m.db.dicts("x", sql="""
        SELECT mem.memory, mem.source_message_ids, r.input_message_ids, r.status
        FROM memories mem JOIN extraction_runs r ON r.id = mem.extraction_run_id""")
    assert len(rows) == m.db.scalar("SELECT count(*) FROM memories") > 10
    msg = {r[0]: r for r in m.db.rows("x", sql="SELECT id, content, source_conversation, source_message_id FROM messages")}
    for row in rows:
        assert row["source_message_ids"] and set(row["source_message_ids"]) <= set(row["input_message_ids"])
        for mid in row["source_message_ids"]:
            assert mid in msg and msg[mid][2] and msg[mid][3]
    seattle = next(r for r in rows if r["memory"].startswith("Alice lives in Seattle"))
    assert "I live in Seattle now" in msg[seattle["source_message_ids"][0]][1]


def test_changes_of_fact_apply_oldest_first(alice_store):
    m, _ = alice_store
    current = {r["memory"] for r in m.get_all(user_id="alice", top_k=500)["results"]}
    assert any(t.startswith("Alice lives in Seattle") for t in current)
    assert "Alice lives in Boston" not in current and "Alice is vegetarian" not in current
    assert "Alice is vegan now" in current
    then = {r["memory"] for r in m.get_all(user_id="alice", as_of="2024-03-01", top_k=500)["results"]}
    assert "Alice lives in Boston" in then and "Alice is vegetarian" in then
    assert not any("Seattle" in t for t in then if t.startswith("Alice lives"))


def test_rerun_adds_nothing(alice_store):
    m, _ = alice_store
    before = counts(m)
    again = m.ingest(ALICE, user_id="alice")
    assert again.messages["stored"] == 0 and again.messages["already_ingested"] == 202
    assert again.conversations["already_ingested"] == 25 and not again.extraction_runs
    assert counts(m) == before


def test_same_file_for_another_user_is_a_separate_scope(alice_store):
    m, _ = alice_store
    r = m.ingest(ALICE, user_id="alice-twin")
    assert r.messages["stored"] == 202
    assert m.db.scalar("SELECT count(*) FROM messages WHERE user_id = 'alice-twin'") == 202


def test_ingested_messages_survive_the_pruning_of_add(alice_store):
    m, _ = alice_store
    for n in range(12):
        m.add(f"Note number {n}: I like tea", user_id="alice")
    added_by_add = m.db.scalar("SELECT count(*) FROM messages WHERE user_id = 'alice' AND source_conversation IS NULL")
    assert added_by_add == m.config.messages_kept == 10
    assert m.db.scalar("SELECT count(*) FROM messages WHERE user_id = 'alice' AND source_conversation IS NOT NULL") == 202


def _chatgpt(conversations: list[list[tuple[str, str, float]]]) -> list[dict]:
    out = []
    for n, turns in enumerate(conversations):
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for k, (role, text, t) in enumerate(turns):
            nid = f"c{n}-n{k}"
            mapping[nid] = {"id": nid, "parent": parent, "children": [], "message": {
                "id": f"c{n}-m{k}", "author": {"role": role}, "create_time": t,
                "content": {"content_type": "text", "parts": [text]}}}
            mapping[parent]["children"].append(nid)
            parent = nid
        out.append({"id": f"conv-{n}", "title": f"c{n}", "create_time": turns[0][2], "mapping": mapping,
                    "current_node": parent})
    return out


def test_a_conversation_that_grew_ingests_only_its_new_messages(tmp_path):
    p = tmp_path / "conversations.json"
    t = 1_710_000_000.0
    convs = [[("user", "I live in Oslo", t), ("assistant", "Nice", t + 5)],
             [("user", "I have a cat named Pixel", t + 900), ("assistant", "Cute", t + 905)]]
    p.write_text(json.dumps(_chatgpt(convs)))
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        assert m.ingest(p, user_id="u").messages["stored"] == 4
        convs[0] += [("user", "I moved to Bergen", t + 86_400), ("assistant", "Rainy!", t + 86_405)]
        p.write_text(json.dumps(_chatgpt(convs)))
        r = m.ingest(p, user_id="u")
        assert (r.messages["stored"], r.messages["already_ingested"]) == (2, 4)
        assert (r.conversations["ingested"], r.conversations["already_ingested"]) == (1, 1)
        assert m.db.scalar("SELECT count(*) FROM messages") == 6
        current = {x["memory"] for x in m.get_all(user_id="u")["results"]}
        assert "User moved to Bergen" in current


def test_several_files_in_one_call_are_merged_in_time_order(tmp_path):
    # Bob's Claude export and a JSONL file for the same person, given newest first.
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"role": "user", "content": "I live in Lisbon now",
                                 "created_at": "2025-02-01T10:00:00"}) + "\n")
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        r = m.ingest([later, BOB], user_id="bob")
        assert r.status == "done" and [f["format"] for f in r.files] == ["jsonl", "claude"]
        current = {x["memory"] for x in m.get_all(user_id="bob", top_k=500)["results"]}
        assert "Bob lives in Lisbon now" in current
        assert "Bob lives in Denver now" not in current    # the 2024 move is older: superseded by Lisbon


def test_progress_bar_shows_rate_when_asked_and_nothing_otherwise(tmp_path, capsys, monkeypatch):
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        m.ingest(BOB, user_id="bob", progress=True)
        err = capsys.readouterr().err
        assert "136/136" in err and "msg/s" in err and "ETA" in err
        monkeypatch.setenv("CI", "true")
        m.ingest(BOB, user_id="bob2")            # default: only on a terminal, never in CI
        assert capsys.readouterr().err == ""
