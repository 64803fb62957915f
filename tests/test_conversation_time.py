"""History events and extraction runs record when they happened in the conversation (`said_at`)
as well as when they were stored (`created_at`): an ingest of a year of chats stores everything in
one second, but "what changed in May?" needs the conversation's time."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys

import polars as pl

from memstore import Memory

HASHING = {"embedder": {"provider": "hashing"}}


def test_an_add_records_its_message_time_beside_the_stored_time(tmp_path):
    with Memory(str(tmp_path / "s.duckdb"), config=HASHING) as m:
        m.add("I live in Boston", user_id="a", timestamp="2024-01-08T10:00:00")
        m.add("I moved to Seattle, I live in Seattle now", user_id="a", timestamp="2024-05-06T18:00:00")
        m.add("I like tea", user_id="a")                      # no timestamp: said when added
        hist = m.frame("history", user_id="a")
        runs = m.frame("extraction_runs", user_id="a").sort("created_at")
    assert {"said_at", "created_at"} <= set(hist.columns)
    sup = hist.filter(pl.col("event") == "SUPERSEDE")
    assert sup.height >= 1 and set(sup["said_at"]) == {dt.datetime(2024, 5, 6, 18)}
    assert sup["created_at"].min() > dt.datetime(2025, 1, 1)        # stored now, not in 2024
    adds = hist.filter(pl.col("event") == "ADD").sort("said_at")
    assert adds["said_at"][0] == dt.datetime(2024, 1, 8, 10)
    tea = adds.filter(pl.col("new_memory").str.contains("tea"))
    assert abs(tea["said_at"][0] - tea["created_at"][0]) < dt.timedelta(seconds=5)
    assert runs["said_at"].to_list()[:2] == [dt.datetime(2024, 1, 8, 10), dt.datetime(2024, 5, 6, 18)]


def test_an_ingest_dates_each_run_and_event_by_its_messages(tmp_path):
    from memstore.dashboard.demo_store import DEMO_DIR

    with Memory(str(tmp_path / "s.duckdb"), config=HASHING) as m:
        m.ingest(DEMO_DIR / "chatgpt/alice/conversations.json", user_id="alice", progress=False)
        hist = m.frame("history", user_id="alice")
        runs = m.frame("extraction_runs", user_id="alice")
        msgs = m.frame("messages", user_id="alice").select(pl.col("id").alias("mid"), pl.col("created_at").alias("t"))
        mems = m.frame("memories", user_id="alice").select("id", "source_message_ids")
    assert hist["created_at"].dt.date().n_unique() == 1               # stored in one go …
    assert hist["said_at"].dt.month().n_unique() >= 6                 # … said over most of a year
    newest = (runs.select("id", pl.col("input_message_ids").alias("mid")).explode("mid").join(msgs, on="mid")
              .group_by("id").agg(pl.col("t").max()))
    both = runs.join(newest, on="id")
    assert both.height == runs.height and (both["said_at"] == both["t"]).all()
    # each ADD is dated by its own fact's source messages, not the batch's newest message
    said = (mems.explode("source_message_ids").join(msgs, left_on="source_message_ids", right_on="mid")
            .group_by("id").agg(pl.col("t").max()))
    adds = hist.filter(pl.col("event") == "ADD").join(said, left_on="memory_id", right_on="id")
    assert adds.height >= 10 and (adds["said_at"] == adds["t"]).all()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memstore.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_list_history_timeline_take_a_period_and_as_of(tmp_path):
    store = str(tmp_path / "s.duckdb")
    with Memory(store) as m:
        m.add("I live in Boston", user_id="a", timestamp="2024-01-08T10:00:00")
        m.add("I moved to Seattle, I live in Seattle now", user_id="a", timestamp="2024-05-06T18:00:00")
        m.add("I like green tea", user_id="a", timestamp="2024-07-01T09:00:00")
    may = _cli("list", "--user", "a", "--store", store, "--all", "--since", "2024-05-01", "--until", "2024-05-31")
    assert may.returncode == 0, may.stderr
    assert "Seattle" in may.stdout and "Boston" not in may.stdout and "tea" not in may.stdout
    assert "(said 2024-05-06" in may.stdout and ", stored " in may.stdout
    then = _cli("list", "--user", "a", "--store", store, "--as-of", "2024-03-01")
    assert "Boston" in then.stdout and "later superseded" in then.stdout and "Seattle" not in then.stdout
    hist = _cli("history", "--user", "a", "--store", store, "--since", "2024-05-01", "--until", "2024-05-31")
    assert hist.returncode == 0, hist.stderr
    assert "SUPERSEDE" in hist.stdout and "tea" not in hist.stdout and "said (conversation)" in hist.stdout
    tl = _cli("timeline", "--user", "a", "--store", store, "--as-of", "2024-03-01")
    boston = next(line for line in tl.stdout.splitlines() if "Boston" in line)
    assert "current" in boston and "Seattle" not in tl.stdout
    bad = _cli("timeline", "--user", "a", "--store", store, "--since", "last tuesday-ish")
    assert bad.returncode != 0 and "since" in bad.stderr and "Traceback" not in bad.stderr
