"""Readers of chat exports: the demo data under data/demo and small hand-made files; each message
keeps its source (file, conversation id, message id) and its time."""
from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memstore
from memstore.core.errors import ConfigError
from memstore.ingest.detect import detect_format
from memstore.ingest.readers import read_source
from memstore.ingest.types import SourceFormatError, UnknownFormatError

DEMO = Path(memstore.__file__).resolve().parent.parent / "data" / "demo"
ALICE = DEMO / "chatgpt" / "alice" / "conversations.json"
BOB = DEMO / "claude" / "bob" / "conversations.json"
CAROL = DEMO / "locomo" / "carol_dave.json"
ERIN = DEMO / "jsonl" / "erin" / "messages.jsonl"


def read(path, fmt=None, **kw):
    problems = []
    convs = list(read_source(path, fmt or detect_format(path), problems, **kw))
    return convs, problems


@pytest.mark.parametrize("path, fmt", [(ALICE, "chatgpt"), (BOB, "claude"), (CAROL, "locomo"), (ERIN, "jsonl")])
def test_demo_files_are_detected(path, fmt):
    assert detect_format(path) == fmt


def test_chatgpt_reads_the_current_branch_only_with_times_and_sources():
    convs, problems = read(ALICE)
    raw = json.loads(ALICE.read_text(encoding="utf-8"))
    assert len(convs) == len(raw) == 25
    texts = [m.content for c in convs for m in c.messages]
    # The first wording ("Cambridge") was edited: it is on an abandoned branch.
    assert any("I live in Boston" in t for t in texts)
    assert not any("Cambridge" in t for t in texts)
    assert sum(p.reason.startswith("not on the current branch") for p in problems) == 2
    # hidden system messages and the code-interpreter call/output are not chat text
    assert {p.reason for p in problems if p.severity == "ignored"} >= {
        "hidden message (not shown in the chat)", "assistant tool call", "tool message"}
    assert "6.0" not in texts and "(3 + 5 + 10) / 3" not in texts
    # an image upload keeps its text part
    assert "This is the view from my new apartment. Which mountain is that?" in texts
    by_id = {c.id: c for c in convs}
    for conv in raw:
        c = by_id[conv["id"]]
        node_ids = {n["message"]["id"] for n in conv["mapping"].values() if n["message"]}
        for m in c.messages:
            assert m.source_file == str(ALICE) and m.source_conversation == conv["id"]
            assert m.source_message_id in node_ids
            assert m.created_at is not None and m.created_at.year == 2024
        times = [m.created_at for m in c.messages]
        assert times == sorted(times)


def test_chatgpt_export_zip_is_read_like_the_extracted_file(tmp_path):
    z = tmp_path / "export.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(ALICE, "conversations.json")
        zf.writestr("chat.html", "<html></html>")
    assert detect_format(z) == "chatgpt"
    zipped, _ = read(z)
    plain, _ = read(ALICE)
    assert [(m.source_message_id, m.content) for c in zipped for m in c.messages] == \
           [(m.source_message_id, m.content) for c in plain for m in c.messages]


def test_chatgpt_missing_current_node_falls_back_to_newest_leaf(tmp_path):
    conv = {"id": "c1", "title": "t", "current_node": "gone", "mapping": {
        "r": {"id": "r", "message": None, "parent": None, "children": ["a", "b"]},
        "a": {"id": "a", "parent": "r", "children": [], "message": {
            "id": "ma", "author": {"role": "user"}, "create_time": 1704700001.0,
            "content": {"content_type": "text", "parts": ["I live in Rome"]}}},
        "b": {"id": "b", "parent": "r", "children": [], "message": {
            "id": "mb", "author": {"role": "user"}, "create_time": 1704700009.0,
            "content": {"content_type": "text", "parts": ["I live in Milan"]}}}}}
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps([conv]))
    convs, problems = read(p)
    assert [m.content for m in convs[0].messages] == ["I live in Milan"]
    assert any("current_node missing" in x.reason and x.conversation == "c1" for x in problems)


def test_claude_reads_text_blocks_and_reports_the_empty_conversation():
    convs, _ = read(BOB)
    raw = json.loads(BOB.read_text(encoding="utf-8"))
    assert [c.id for c in convs] == [c["uuid"] for c in raw]
    empty = [c for c in convs if not c.messages]
    assert [c.title for c in empty] == ["Empty"]
    first = convs[0].messages[0]
    assert first.role == "user" and first.source_message_id == raw[0]["chat_messages"][0]["uuid"]
    assert {m.role for c in convs for m in c.messages} == {"user", "assistant"}


def test_locomo_sessions_become_conversations_with_speakers_and_session_times():
    convs, _ = read(CAROL)
    assert [c.id for c in convs] == [f"demo-carol-dave/session_{n}" for n in range(1, 7)]
    first = convs[0].messages[0]
    assert (first.name, first.role, first.source_message_id) == ("Carol", "user", "D1:1")
    assert str(first.created_at) == "2024-01-20 13:00:00"
    assert {m.name for c in convs for m in c.messages} == {"Carol", "Dave"}


def test_jsonl_with_explicit_mapping_and_role_aliases():
    convs, problems = read(ERIN, mapping="role=author,content=text,ts=created,conversation=thread,id=msg_id")
    rows = [json.loads(line) for line in ERIN.read_text().splitlines()]
    assert sum(len(c.messages) for c in convs) == len(rows) and not problems
    msgs = [m for c in convs for m in c.messages]
    assert [m.source_message_id for m in msgs] == [r["msg_id"] for r in rows]
    assert {m.role for m in msgs} == {"user", "assistant"}        # human / ai
    assert msgs[0].source_conversation == rows[0]["thread"]


def test_a_json_array_of_messages_reads_as_rows(tmp_path):
    """[{"role", "content"}, ...] (what chat APIs take) is found and read as message rows, with
    times; a record that is not an object is reported by its number and the others are kept."""
    p = tmp_path / "chat.json"
    p.write_text(json.dumps([{"role": "user", "content": "I live in Lisbon", "created_at": "2024-03-01T10:00:00"},
                             {"role": "assistant", "content": "Nice city!"}, ["not", "a", "message"],
                             {"role": "user", "content": "My sister Ana is a doctor"}]))
    assert detect_format(p) == "jsonl"
    convs, problems = read(p)
    msgs = [m for c in convs for m in c.messages]
    assert [(m.role, m.content) for m in msgs] == [("user", "I live in Lisbon"), ("assistant", "Nice city!"),
                                                   ("user", "My sister Ana is a doctor")]
    assert msgs[0].created_at is not None and msgs[0].created_at.day == 1
    assert [pr.message for pr in problems] == ["record 3"] and "not an object" in problems[0].reason


def test_mapping_naming_a_missing_column_is_a_clear_error(tmp_path):
    with pytest.raises(SourceFormatError, match="no column 'body'"):
        read(ERIN, mapping="content=body")
    with pytest.raises(ConfigError, match="unknown field 'colour'"):
        read(ERIN, mapping="colour=red")


def test_csv_and_parquet_read_the_same_rows(tmp_path):
    rows = [{"chat": "c1", "who": "user", "said": "I live in Oslo", "at": "2024-02-01T10:00:00"},
            {"chat": "c1", "who": "assistant", "said": "Nice", "at": "2024-02-01T10:00:05"},
            {"chat": "c2", "who": "Maria", "said": "I have a dog", "at": "2024-02-02T09:00:00"}]
    c = tmp_path / "m.csv"
    with open(c, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    p = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p)
    mapping = {"conversation": "chat", "role": "who", "content": "said", "ts": "at"}
    out = {}
    for path in (c, p):
        convs, problems = read(path, mapping=mapping)
        assert not problems
        out[path.suffix] = [(cv.id, m.role, m.name, m.content, m.created_at, m.source_message_id)
                            for cv in convs for m in cv.messages]
    assert out[".csv"] == out[".parquet"]
    assert [x[0] for x in out[".csv"]] == ["c1", "c1", "c2"]
    # a speaker's name in the role column is a person talking: a user message with that name
    assert out[".csv"][2][1:3] == ("user", "Maria")
    # rows without ids get a stable key from role, time and text
    again, _ = read(c, mapping=mapping)
    assert [m.source_message_id for cv in again for m in cv.messages] == [x[5] for x in out[".csv"]]


def test_unknown_and_missing_files_are_clear_errors(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\n")
    with pytest.raises(UnknownFormatError, match="cannot tell the format.*--format"):
        detect_format(p)
    q = tmp_path / "other.json"
    q.write_text(json.dumps([{"foo": 1}]))
    with pytest.raises(UnknownFormatError, match="first record has keys \\['foo'\\]") as err:
        detect_format(q)
    assert "not valid JSON" not in str(err.value)     # valid JSON of an unknown shape is not called broken
    with pytest.raises(FileNotFoundError):
        detect_format(tmp_path / "nope.json")
    with pytest.raises(UnknownFormatError, match="is a directory"):
        detect_format(tmp_path)
