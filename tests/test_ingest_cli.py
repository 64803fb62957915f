"""`memstore ingest FILE... --user NAME`: store from --store, else $MEMSTORE_PATH; a summary (or
--json) on stdout, no progress bar when not on a terminal, advice and exit 1 when something was not
stored, exit 2 on a usage mistake."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import memstore
from memstore import Memory
from memstore.cli import main

DEMO = Path(memstore.__file__).resolve().parent.parent / "data" / "demo"
CAROL = DEMO / "locomo" / "carol_dave.json"
ERIN = DEMO / "jsonl" / "erin" / "messages.jsonl"


def test_ingest_prints_a_summary_and_a_rerun_adds_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    store = str(tmp_path / "s.duckdb")
    assert main(["ingest", str(CAROL), "--user", "carol", "--store", store]) == 0
    out, err = capsys.readouterr()
    assert "18 of 18 messages stored" in out and "conversations: 6 read, 6 ingested" in out
    assert err == ""                                  # not a terminal: no progress bar
    assert main(["ingest", str(CAROL), "--user", "carol", "--store", store]) == 0
    out, _ = capsys.readouterr()
    assert "0 of 18 messages stored, 18 already ingested" in out
    with Memory(store) as m:
        assert {r["attributed_to"] for r in m.get_all(user_id="carol", top_k=100)["results"]} == {"Carol", "Dave"}


def test_store_comes_from_memstore_path_and_map_names_columns(tmp_path, capsys, monkeypatch):
    store = tmp_path / "env.duckdb"
    monkeypatch.setenv("MEMSTORE_PATH", str(store))
    code = main(["ingest", str(ERIN), "--user", "erin", "--json",
                 "--map", "role=author,content=text,ts=created,conversation=thread,id=msg_id"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["messages"]["stored"] == 86 and report["status"] == "done"
    assert report["files"] == [{"path": str(ERIN), "format": "jsonl", "conversations": 11, "messages_read": 86,
                                "error": None}]
    assert store.exists()
    with Memory(str(store)) as m:
        assert m.db.scalar("SELECT count(DISTINCT source_conversation) FROM messages") == 11


def test_problems_give_exit_1_and_advice(tmp_path, capsys):
    store = str(tmp_path / "s.duckdb")
    cut = tmp_path / "conversations.json"
    data = (DEMO / "claude" / "bob" / "conversations.json").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert main(["ingest", str(cut), "--user", "bob", "--store", store]) == 1
    out, err = capsys.readouterr()
    assert "FILE ERROR" in out and "cut off or damaged" in out
    assert "run the same command again to complete the rest" in err


@pytest.mark.parametrize("argv, code, message", [
    (["ingest", "FILE"], 2, "--user NAME"),
    (["ingest", "NOTES", "--user", "x"], 1, "cannot tell the format"),
    (["ingest", "MISSING", "--user", "x"], 1, "no such file"),
])
def test_usage_and_input_errors(tmp_path, capsys, argv, code, message):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    subst = {"FILE": str(CAROL), "NOTES": str(notes), "MISSING": str(tmp_path / "nope.json")}
    argv = [subst.get(a, a) for a in argv] + ["--store", str(tmp_path / "s.duckdb")]
    assert main(argv) == code
    assert message in capsys.readouterr().err
