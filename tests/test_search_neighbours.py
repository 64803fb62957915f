"""Facts added one by one (`add(fact, infer=False)`, no conversation) are read with the facts said
just before and after them (search.neighbour_window places on each side), as facts stored by
one add() call are read with their conversation: a fact that leaves its topic implicit is found
through its neighbours. The SQL reference agrees (tests/test_search_golden.py covers the stores
there; here: a memory that expires out of a search snapshot)."""
from __future__ import annotations

import datetime as dt
import time
import warnings

import numpy as np
import pytest

from memstore import Memory
from memstore.core.errors import ConfigError
from memstore.retrieval.fusion import neighbour_context
from memstore.retrieval.search import candidate_table

PUPPY = ["Maria adopted a puppy named Rex", "He chews every shoe in the house", "The vet said he is healthy"]
OTHER = ["The quarterly tax report is due in April", "John repaired the roof of the garage",
         "Joanna wrote a screenplay about a lighthouse", "Tim collects signed basketballs",
         "Nate is learning to cook Thai curry", "Gina opened an online clothing store"]


def _memory(path, window: int, **cfg) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(str(path), config={"embedder": {"provider": "hashing"},
                                         "search": {"neighbour_window": window}, **cfg})


def test_the_context_is_the_mean_of_the_window_around_each_fact():
    rng = np.random.default_rng(7)
    v = rng.normal(size=(9, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    order = rng.permutation(9)
    times = np.array([0, 5, 9, 500, 501, 503, 504, 2000, 2001])      # pauses > 100 after the 3rd and 7th
    runs = [range(0, 3), range(3, 7), range(7, 9)]
    for w in (1, 2, 4):
        for gap, cut in ((np.inf, False), (100, True)):
            nb = neighbour_context(v, order, w, times, gap)
            for p, row in enumerate(order):
                run = next(r for r in runs if p in r) if cut else range(9)
                c = v[order[max(p - w, run.start):min(p + w + 1, run.stop)]].astype(np.float64).mean(axis=0)
                assert nb.dot[p] == pytest.approx(float(v[row] @ c), abs=1e-6)
                assert nb.sq[p] == pytest.approx(float(c @ c), abs=1e-6)
    assert neighbour_context(v, order, 0) is None and neighbour_context(v, order[:1], 2) is None


@pytest.mark.parametrize("window", [0, 2])
def test_a_fact_that_leaves_its_topic_implicit_is_found_through_its_neighbours(tmp_path, window):
    m = _memory(tmp_path / "n.duckdb", window)
    try:
        for text in OTHER[:3] + PUPPY + OTHER[3:]:
            m.add(text, user_id="u", infer=False)
        res = m.search("Maria puppy Rex", user_id="u", top_k=20, explain=True,
                       channels=["semantic"])["results"]
        sem = {r["memory"]: r["explain"]["semantic"] for r in res}
        shoe = sem.get("He chews every shoe in the house", 0.0)
        far = max(sem.get(t, 0.0) for t in OTHER)
        if window:
            assert shoe > 0.05 and shoe > 2 * far, sem
            assert set([r["memory"] for r in res][:3]) == set(PUPPY)
        else:
            assert shoe < 0.02, sem        # no shared word with the query: nothing to find it by
    finally:
        m.close()


def test_facts_told_days_apart_are_not_neighbours(tmp_path):
    """Neighbours are the facts said around the same time: a pause of more than episode_minutes
    ends a run (dates given to add(); without them, the storage times)."""
    sems = []
    for minutes in (30, 3 * 24 * 60):            # the puppy facts half an hour apart, then days apart
        m = _memory(tmp_path / f"d{minutes}.duckdb", 2)
        try:
            for i, text in enumerate(PUPPY + OTHER):
                when = dt.datetime(2024, 1, 1) + dt.timedelta(minutes=minutes * i)
                m.add(text, user_id="u", infer=False, timestamp=when.isoformat())
            res = m.search("Maria puppy Rex", user_id="u", top_k=20, explain=True, channels=["semantic"])
            sems.append({r["memory"]: r["explain"]["semantic"] for r in res["results"]})
        finally:
            m.close()
    shoe = "He chews every shoe in the house"
    assert sems[0].get(shoe, 0.0) > 0.05            # within the hour: read with "Maria adopted a puppy"
    assert sems[1].get(shoe, 0.0) < 0.02            # days apart: alone, its own cosine


def test_facts_stored_by_one_add_call_keep_their_conversation(tmp_path):
    scores = []
    for window in (0, 2):
        m = _memory(tmp_path / f"c{window}.duckdb", window)
        try:
            m.add([{"role": "user", "content": t} for t in PUPPY], user_id="u", infer=False)
            m.add([{"role": "user", "content": t} for t in OTHER], user_id="u", infer=False)
            res = m.search("Maria puppy Rex", user_id="u", top_k=20, explain=True)["results"]
            scores.append({r["memory"]: round(r["explain"]["semantic"], 6) for r in res})
        finally:
            m.close()
    assert scores[0] == scores[1] and scores[0]["He chews every shoe in the house"] > 0.1


def test_a_memory_expiring_out_of_a_snapshot_leaves_the_sql_reference_equal(tmp_path):
    m = _memory(tmp_path / "e.duckdb", 2)
    try:
        soon = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=1.5)
        for i, text in enumerate(OTHER[:2] + PUPPY + OTHER[2:]):
            m.add(text, user_id="u", infer=False, expiration_date=soon if i == 3 else None)
        for _ in range(2):               # the second search of a scope builds its snapshot
            m.search("Maria puppy Rex", user_id="u")
        time.sleep(1.6)
        got = {r["id"]: r["semantic"] for r in candidate_table(m._rt, "Maria puppy Rex", filters={"user_id": "u"},
                                                               limit=100).to_pylist()}
        ref = {r["id"]: r["semantic"] for r in candidate_table(m._rt, "Maria puppy Rex", filters={"user_id": "u"},
                                                               limit=100, engine="sql").to_pylist()}
        assert len(got) == len(OTHER) + len(PUPPY) - 1 and got.keys() == ref.keys()
        for k in got:
            assert got[k] == pytest.approx(ref[k], abs=1e-5)
    finally:
        m.close()


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_the_window_is_a_whole_number_of_memories(tmp_path, bad):
    with pytest.raises(ConfigError, match="neighbour_window"):
        _memory(tmp_path / "x.duckdb", bad)


def _episodes(m: Memory, query: str, engine: str, **kw) -> dict[str, float]:
    t = candidate_table(m._rt, query, filters={"user_id": "u"}, limit=100, engine=engine, **kw).to_pylist()
    text = {r["id"]: r["memory"] for r in m.get_all(filters={"user_id": "u"}, top_k=100)["results"]}
    return {text[r["id"]]: r["episode"] for r in t}


@pytest.mark.parametrize("window", [0, 2])
def test_the_episode_of_a_fact_added_alone_is_its_neighbour_window(tmp_path, window):
    """One by one, no dates: every fact is its own add() call, so only the window of facts said just
    before and after the best match can stand for its conversation."""
    m = _memory(tmp_path / f"ep{window}.duckdb", window)
    try:
        for text in OTHER[:3] + PUPPY + OTHER[3:]:
            m.add(text, user_id="u", infer=False)
        ep = _episodes(m, "Maria adopted a puppy named Rex", "numpy")
        near = {t for t, v in ep.items() if v == 1.0}
        if window:      # the anchor is PUPPY[0], 4th said: the 2 facts before it and the 2 after
            assert near == {OTHER[1], OTHER[2], *PUPPY}, ep
        else:
            assert near == {PUPPY[0]}, ep
        assert len(ep) == len(OTHER) + len(PUPPY)
    finally:
        m.close()


def test_the_episode_of_facts_added_alone_agrees_with_the_sql_reference(tmp_path):
    """NumPy (first search: statements; second: the scope's snapshot) against fuse_scores.sql, on
    undated facts, on dated ones whose window outreaches episode_minutes (50 minutes apart: 2 places
    is 100 minutes) and across a pause of days, with every channel and with semantic off."""
    m = _memory(tmp_path / "agree.duckdb", 2)
    try:
        start = dt.datetime(2024, 1, 1)
        for i, text in enumerate(OTHER[:3] + PUPPY):
            m.add(text, user_id="u", infer=False, timestamp=(start + dt.timedelta(minutes=50 * i)).isoformat())
        for text in OTHER[3:]:              # then, one by one, undated (stored now: days later)
            m.add(text, user_id="u", infer=False)
        queries = ["Maria adopted a puppy named Rex", "puppy shoe vet", "Tim basketballs", "quarterly tax report",
                   "Gina clothing store"]
        seen = 0
        for q in queries:
            for channels in (("semantic", "keyword", "entity"), ("keyword", "entity")):
                ref = _episodes(m, q, "sql", channels=channels)
                for _ in range(2):
                    assert _episodes(m, q, "numpy", channels=channels) == ref, (q, channels)
                seen += sum(v == 1.0 for v in ref.values())
        ep = _episodes(m, "Maria adopted a puppy named Rex", "numpy")
        # 50-minute steps: the window (2 places) reaches 100 minutes back; OTHER[3:] were said days later
        assert {t for t, v in ep.items() if v == 1.0} == {OTHER[1], OTHER[2], *PUPPY}, ep
        assert seen > len(queries) * 2
    finally:
        m.close()
