"""History events and extraction runs record when they happened in the conversation (`said_at`)
as well as when they were stored (`created_at`): an ingest of a year of chats stores everything in
one second, but "what changed in May?" needs the conversation's time."""
from __future__ import annotations

import datetime as dt

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
    assert hist["created_at"].dt.date().n_unique() == 1               # stored in one go …
    assert hist["said_at"].dt.month().n_unique() >= 6                 # … said over most of a year
    newest = (runs.select("id", pl.col("input_message_ids").alias("mid")).explode("mid").join(msgs, on="mid")
              .group_by("id").agg(pl.col("t").max()))
    both = runs.join(newest, on="id")
    assert both.height == runs.height and (both["said_at"] == both["t"]).all()
