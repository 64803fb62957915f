"""Bad input: each case gives a clear error, or a skip/warning whose reason names the file,
conversation and message, and never loses what was already ingested."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import memstore
from memstore import Memory
from memstore.ingest.types import UnknownFormatError

DEMO = Path(memstore.__file__).resolve().parent.parent / "data" / "demo"
ALICE = DEMO / "chatgpt" / "alice" / "conversations.json"
BOB = DEMO / "claude" / "bob" / "conversations.json"


@pytest.fixture
def m(tmp_path):
    mem = Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    yield mem
    mem.close()


def claude(*convs: list[tuple[str, str]]) -> list[dict]:
    return [{"uuid": f"conv-{n}", "name": f"c{n}", "created_at": f"2024-03-0{n + 1}T10:00:00Z", "chat_messages": [
        {"uuid": f"conv-{n}-m{k}", "sender": sender, "text": text, "created_at": f"2024-03-0{n + 1}T10:0{k}:00Z"}
        for k, (sender, text) in enumerate(turns)]} for n, turns in enumerate(convs)]


def problems(report, severity=None):
    return [p for p in report.problems if severity is None or p.severity == severity]


def test_truncated_json_keeps_what_came_before_and_a_rerun_of_the_full_file_completes(m, tmp_path):
    data = ALICE.read_bytes()
    cut = tmp_path / "conversations.json"
    cut.write_bytes(data[: len(data) // 2])
    r = m.ingest(cut, user_id="alice")
    assert r.status == "done_with_problems"
    err = r.files[0]["error"]
    assert "cut off or damaged after conversation #" in err and "re-export or repair" in err
    n_read = r.files[0]["conversations"]
    assert 0 < n_read < 25 and r.conversations["ingested"] == n_read
    stored = m.db.scalar("SELECT count(*) FROM messages")
    assert stored == r.messages["stored"] > 0
    full = m.ingest(ALICE, user_id="alice")
    assert full.status == "done" and full.messages["already_ingested"] == stored
    assert m.db.scalar("SELECT count(*) FROM messages") == 202
    assert m.db.scalar("SELECT count(DISTINCT source_message_id) FROM messages") == 202


def test_unknown_format_is_an_error_before_anything_is_written(m, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("dear diary, I live in Paris\n")
    with pytest.raises(UnknownFormatError, match=r"cannot tell the format of .*notes.txt.*--format"):
        m.ingest([ALICE, p], user_id="alice")
    assert m.db.scalar("SELECT count(*) FROM ingest_runs") == 0
    assert m.db.scalar("SELECT count(*) FROM messages") == 0
    with pytest.raises(UnknownFormatError, match="unknown format 'whatsapp'"):
        m.ingest(ALICE, user_id="alice", format="whatsapp")


def test_a_file_that_is_not_what_format_says_is_a_file_error_in_the_report(m, tmp_path):
    p = tmp_path / "messages.csv"
    p.write_text("role,content\nuser,I live in Paris\n")
    r = m.ingest([p, ALICE], user_id="alice", format="chatgpt")
    assert r.files[0]["error"] and "messages.csv" in r.files[0]["error"]
    assert r.files[1]["error"] is None and r.messages["stored"] == 202   # the other file still went in
    assert any(x.severity == "error" and x.file == str(p) for x in r.problems)
    wrong = m.ingest(BOB, user_id="bob", format="chatgpt")
    assert wrong.messages["stored"] == 0 and wrong.conversations["skipped"] == 20
    assert "looks like a Claude export" in wrong.problems[0].reason


def test_a_50_mb_message_is_skipped_with_its_reason_and_the_rest_is_stored(m, tmp_path):
    huge = "x" * (50 * 1024 * 1024)
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(claude([("human", "I live in Quito"), ("human", huge), ("assistant", "ok")])))
    r = m.ingest(p, user_id="u")
    skipped = problems(r, "skipped")
    assert len(skipped) == 1
    assert (skipped[0].file, skipped[0].conversation, skipped[0].message) == (str(p), "conv-0", "conv-0-m1")
    assert "52,428,800 characters, over the limit of 200,000" in skipped[0].reason
    assert r.messages["stored"] == 2 and r.messages["skipped"] == 1 and r.balanced()
    assert m.db.scalar("SELECT max(length(content)) FROM messages") < 100
    assert "User lives in Quito" in {x["memory"] for x in m.get_all(user_id="u")["results"]}


def test_invalid_utf8_is_repaired_and_reported_per_message(m, tmp_path):
    good = json.dumps(claude([("human", "I live in Lima"), ("human", "I like MARKER food")]))
    raw = good.encode("utf-8").replace(b"MARKER", b"caf\xe9\xff")
    p = tmp_path / "conversations.json"
    p.write_bytes(raw)
    r = m.ingest(p, user_id="u", format="claude")
    assert r.messages["stored"] == 2
    warn = [x for x in problems(r, "warning") if x.message]
    assert [(x.conversation, x.message) for x in warn] == [("conv-0", "conv-0-m1")]
    assert "invalid UTF-8" in warn[0].reason
    assert any("2 invalid UTF-8 byte sequence(s)" in x.reason for x in problems(r, "warning"))
    assert m.db.scalar("SELECT content FROM messages WHERE source_message_id = 'conv-0-m1'") == \
        "I like caf\ufffd\ufffd food"


def test_bad_jsonl_lines_are_skipped_with_their_line_numbers(m, tmp_path):
    p = tmp_path / "m.jsonl"
    lines = [json.dumps({"role": "user", "content": "I live in Accra", "created_at": "2024-01-01T10:00:00"}),
             '{"role": "user", "content": "I have a pa',          # cut-off line
             json.dumps(["not", "an", "object"]),
             json.dumps({"role": "user", "content": "   "}),
             json.dumps({"role": "user", "content": "I have a parrot", "created_at": "2024-01-02T10:00:00"})]
    p.write_bytes(("\n".join(lines) + "\n").encode() + b'{"role": "user", "content": "bad \xff byte"}\n')
    r = m.ingest(p, user_id="u")
    assert r.messages["stored"] == 3 and r.balanced()
    reasons = {x.message: x.reason for x in r.problems}
    assert reasons["line 2"].startswith("line 2 is not valid JSON")
    assert reasons["line 3"] == "line 3 is a JSON list, not an object"
    assert reasons["line 4"] == "line 4: empty message"
    assert "line 6: invalid UTF-8" in reasons["line 6"]


def test_empty_conversation_is_reported_by_id(m):
    r = m.ingest(BOB, user_id="bob")
    raw = json.loads(BOB.read_text(encoding="utf-8"))
    empty_id = next(c["uuid"] for c in raw if not c["chat_messages"])
    assert r.conversations["empty"] == 1
    assert [(x.conversation, x.reason) for x in problems(r, "warning")] == \
        [(empty_id, "empty conversation (no chat text)")]


def test_lone_surrogate_escapes_are_replaced_not_fatal(m, tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps({"id": f"m{n}", "role": "user", "content": text})
                           for n, text in enumerate(["I live in Kyiv", "broken \ud800 text"])) + "\n")
    r = m.ingest(p, user_id="u")
    assert r.messages["stored"] == 2
    assert [x.message for x in r.problems if "lone surrogate" in x.reason] == ["m1"]
    assert m.db.scalar("SELECT content FROM messages WHERE source_message_id = 'm1'") == "broken ? text"


def test_a_damaged_conversation_is_skipped_and_the_next_one_is_read(m, tmp_path):
    convs = claude([("human", "I live in Rome")], [("human", "I live in Turin")])
    convs.insert(1, {"uuid": "broken", "name": "x", "chat_messages": "not a list"})
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(convs))
    r = m.ingest(p, user_id="u", format="claude")
    assert r.messages["stored"] == 2 and r.conversations["skipped"] == 1
    assert any(x.conversation == "broken" and "chat_messages" in x.reason for x in r.problems)
