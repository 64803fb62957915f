"""Resumable ingest: a real `memstore ingest` subprocess is SIGKILLed in the middle of a write
transaction; the store then holds only whole conversations, and running the same command again
completes the rest with no duplicates — ending exactly where one uninterrupted run ends."""
from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

import memstore
from memstore import Memory

REPO = Path(memstore.__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("make_demo_data", REPO / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_demo_data"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    gen = _generator()
    convs = gen.synthetic_story(700, seed=7)
    data = gen.chatgpt_export(convs, random.Random(7))
    p = tmp_path_factory.mktemp("export") / "conversations.json"
    p.write_text(json.dumps(data))
    expected = {c["id"]: sum(1 for n in c["mapping"].values() if n["message"]
                             and n["message"]["author"]["role"] in ("user", "assistant")) for c in data}
    return p, expected


# The child is the real CLI; the test only adds a pause at a named fault point so the kill lands
# inside a write transaction (after rows were inserted, before COMMIT) on the 3rd write group.
CHILD = textwrap.dedent("""
    import sys, time
    from memstore.store.database import Database
    original = Database.checkpoint
    seen = 0
    def checkpoint(self, point):
        global seen
        if point == "write:ingest_log":
            seen += 1
            if seen == 3:
                print("PAUSED-IN-TRANSACTION", flush=True)
                time.sleep(120)
        return original(self, point)
    Database.checkpoint = checkpoint
    from memstore.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _ingest_cmd(store: str, src: Path) -> list[str]:
    return [sys.executable, "-c", CHILD, "ingest", str(src), "--user", "kim", "--store", store, "--quiet",
            "--commit-messages", "150"]


def _messages_by_conversation(m: Memory) -> Counter:
    return Counter(dict(m.db.rows("x", sql="SELECT source_conversation, count(*) FROM messages GROUP BY 1")))


def test_sigkill_mid_transaction_then_rerun_completes_without_duplicates(export, tmp_path):
    src, expected = export
    store = str(tmp_path / "killed.duckdb")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("MEMSTORE_PATH", None)
    child = subprocess.Popen(_ingest_cmd(store, src), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    deadline = time.time() + 240
    line = ""
    while time.time() < deadline:
        line = child.stdout.readline()
        if "PAUSED-IN-TRANSACTION" in line or child.poll() is not None:
            break
    assert "PAUSED-IN-TRANSACTION" in line, child.stderr.read()
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    with Memory(store) as m:
        assert m.db.rows("x", sql="SELECT status FROM ingest_runs") == [("running",)]
        partial = _messages_by_conversation(m)
        n_partial = sum(partial.values())
        # two groups of ~150 messages were committed; the third was in flight and left nothing
        assert 250 < n_partial < sum(expected.values()) - 150
        assert all(n == expected[c] for c, n in partial.items()), "a conversation is half-written"
        assert m.db.scalar("SELECT count(*) FROM ingest_log") == n_partial
        orphans = m.db.scalar("SELECT count(*) FROM memories WHERE extraction_run_id NOT IN "
                              "(SELECT id FROM extraction_runs)")
        assert orphans == 0

    rerun = subprocess.run([sys.executable, "-m", "memstore.cli", "ingest", str(src), "--user", "kim", "--store",
                            store, "--json", "--commit-messages", "150"], capture_output=True, text=True, env=env, timeout=300,
                           check=False)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["messages"]["already_ingested"] == n_partial
    assert report["messages"]["stored"] == sum(expected.values()) - n_partial

    with Memory(store) as m:
        assert _messages_by_conversation(m) == Counter(expected)
        assert m.db.scalar("SELECT count(*) FROM messages") == \
            m.db.scalar("SELECT count(DISTINCT (source_conversation, source_message_id)) FROM messages")
        resumed = sorted(m.db.rows("x", sql="SELECT memory, invalidated_at IS NULL FROM memories"))
        statuses = sorted(r[0] for r in m.db.rows("x", sql="SELECT status FROM ingest_runs"))
        assert statuses == ["done", "running"]

    with Memory(str(tmp_path / "clean.duckdb")) as clean:
        clean.ingest(src, user_id="kim", commit_messages=150)
        assert sorted(clean.db.rows("x", sql="SELECT memory, invalidated_at IS NULL FROM memories")) == resumed
