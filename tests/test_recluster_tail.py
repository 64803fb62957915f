"""Tail passes (memstore/store/recluster.py, memstore/store/cluster_runs.py): once a store is sorted,
a pass sorts only the rows appended since into one more run and leaves the sorted rows where they
are; the run's end is found again after a vacuum renumbered the rows or its last row was deleted;
runs are merged at max_runs; the trigger starts a tail pass at tail_rows; adds and searches between
a tail pass's slices change nothing; a tail pass killed inside or between slices loses nothing."""
from __future__ import annotations

import random
import subprocess
import sys
import threading
import warnings
from pathlib import Path

from memstore import Memory
from memstore.store import cluster_runs
from memstore.store.cluster_runs import read_runs, resolve_end
from memstore.store.optimize import auto_state
from memstore.store.recluster import PASS_THREADS, recluster_pass
from tests.test_recluster_slices import CHILD

REPO = Path(__file__).resolve().parent.parent
USERS = [f"u{i:02d}" for i in range(10)]
TABLES = ("memories", "keyword_postings", "entity_postings")


def _open(path: str, **search) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Memory(path, config={"embedder": {"provider": "hashing"},
                                    "search": {"auto_cluster_min_rows": 0, **search}})


def _add_round(m: Memory, tag: str, per_user: int = 3, users: list[str] = USERS) -> None:
    """One batch a user, users interleaved: append order."""
    for u in users:
        m.add([{"role": "user", "content": f"{u} {tag} note {j} about city{j % 4} and topic{(j + len(tag)) % 5}"}
               for j in range(per_user)], user_id=u, infer=False)


def _rows(m: Memory, table: str = "memories") -> list[tuple]:
    key = "id" if table == "memories" else "memory_id"
    return m.db.rows("x", sql=f"SELECT rowid, {key}, user_id FROM {table} ORDER BY rowid")


def _runs_of(users: list[str]) -> int:
    """Sorted runs in a sequence (1 = sorted)."""
    return 1 + sum(1 for a, b in zip(users, users[1:]) if b < a)


def _state(m: Memory) -> tuple:
    db = m.db
    ids = sorted(r[0] for r in db.rows("x", sql="SELECT id FROM memories"))
    kw = db.rows("x", sql="SELECT memory_id, term, count(*) FROM keyword_postings GROUP BY ALL ORDER BY ALL")
    ent = db.rows("x", sql="SELECT memory_id, entity_id, count(*) FROM entity_postings GROUP BY ALL ORDER BY ALL")
    results = {u: [(r["id"], round(r["score"], 9)) for r in m.search("city1 topic2 note", user_id=u, top_k=5)["results"]]
               for u in USERS[::3]}
    return ids, kw, ent, results


def _sorted_store(path: str) -> Memory:
    m = _open(path)
    _add_round(m, "first")
    _add_round(m, "second")
    out = recluster_pass(m.db, slice_rows=20, full=False)
    assert out["mode"] == "full" and out["complete"] and len(read_runs(m.db)) == 1
    return m


def test_a_tail_pass_sorts_only_the_tail_into_a_second_run(store_path):
    m = _sorted_store(store_path)
    sorted_part = {t: _rows(m, t) for t in TABLES}
    _add_round(m, "later", per_user=2)
    before = _state(m)
    out = recluster_pass(m.db, slice_rows=10, full=False)
    assert out["mode"] == "tail" and out["complete"] and out["memories"] == 2 * len(USERS) and out["runs"] == 2
    for t in TABLES:
        rows = _rows(m, t)
        assert rows[:len(sorted_part[t])] == sorted_part[t], t          # the sorted rows did not move
        tail = [r[2] for r in rows[len(sorted_part[t]):]]
        assert tail == sorted(tail) and len(tail) > 0, t                 # the appended rows: one sorted run
    assert _state(m) == before
    assert len(read_runs(m.db)) == 2
    assert m.doctor().height == 0
    m.close()


def test_the_run_end_is_found_after_a_vacuum_renumbered_the_rows_and_after_its_last_row_was_deleted(store_path):
    m = _sorted_store(store_path)
    db = m.db
    first = _rows(m)
    for mid in [r[1] for r in first[:20]]:              # a block of the sorted part, gone
        m.delete(mid)
    m.delete(first[-1][1])                              # and the run's last row (its first sentinel)
    kept = _rows(m)
    _add_round(m, "later", per_user=2)
    db.run("queries/admin/checkpoint")                  # the row group is rewritten: every row after them renumbered
    assert _rows(m)[len(kept) - 1][0] < kept[-1][0] and [r[1] for r in _rows(m)[:len(kept)]] == [r[1] for r in kept]
    kept = _rows(m)[:len(kept)]
    before = _state(m)
    out = recluster_pass(db, slice_rows=10, full=False)
    assert out["mode"] == "tail" and out["complete"]
    users = [r[2] for r in _rows(m)]
    assert _runs_of(users) == 2
    # the sorted rows stayed put, except the few after the nearest sentinel left (re-sorted with the tail)
    assert [r[1] for r in _rows(m)[:len(kept) - 16]] == [r[1] for r in kept[:len(kept) - 16]]
    assert out["memories"] <= 2 * len(USERS) + 16
    assert _state(m) == before
    first_run = read_runs(db)[0]                        # its new end recorded: found with one lookup again
    assert all(resolve_end(db, t, first_run[t]) == first_run[t]["end"] for t in TABLES)
    assert db.rows("x", sql=f"SELECT id FROM memories WHERE rowid = {first_run['memories']['end'] - 1}")[0] == \
        tuple(first_run["memories"]["keys"][0])
    m.close()


def test_runs_are_merged_at_max_runs_and_the_table_rewritten_when_later_runs_outgrow_it(store_path):
    m = _sorted_store(store_path)
    db = m.db
    first = _rows(m)
    modes = []
    for i in range(3):
        _add_round(m, f"tail{i}", per_user=1, users=USERS[: 4 + i])
        modes.append(recluster_pass(db, slice_rows=50, full=False, max_runs=3)["mode"])
    assert modes == ["tail", "tail", "merge"]           # the 4th run: the later runs merged into one
    users = [r[2] for r in _rows(m)]
    assert len(read_runs(db)) == 2 and _runs_of(users) == 2
    assert _rows(m)[:len(first)] == first               # the first run untouched
    _add_round(m, "big", per_user=3)
    _add_round(m, "bigger", per_user=3)
    recluster_pass(db, slice_rows=50, full=False, max_runs=3)
    _add_round(m, "biggest", per_user=3)
    out = recluster_pass(db, slice_rows=50, full=False, max_runs=3, merge_share=0.5)
    assert out["mode"] == "full" and len(read_runs(db)) == 1          # later runs > half the table
    assert _runs_of([r[2] for r in _rows(m)]) == 1
    assert m.optimize()["mode"] == "full"                              # optimize(): always the whole table
    m.close()


def test_a_sorted_store_starts_a_tail_pass_at_tail_rows_not_at_the_share(store_path):
    m = _sorted_store(store_path)
    m.close()
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.5)
    state = auto_state(m.db)
    state.every_s = 0                                   # count at every commit (the test's clock)
    state.tail_rows = 12
    _add_round(m, "a", per_user=1)                      # 10 new of 70: under both limits
    assert not state.runs and not state.running()
    _add_round(m, "b", per_user=1, users=USERS[:6])     # 16 > tail_rows (the share: 38)
    state.wait(30)
    assert state.runs and state.runs[-1]["mode"] == "tail" and state.error is None
    assert state.runs[-1]["memories"] > state.tail_rows     # started by the commit that passed it
    end = read_runs(m.db)[-1]["memories"]["end"]      # (the adds after that commit: the next tail)
    assert _runs_of([r[2] for r in _rows(m) if r[0] < end]) == 2
    m.close()


def test_adds_and_searches_between_the_slices_of_a_tail_pass_change_nothing(store_path):
    m = _sorted_store(store_path)
    _add_round(m, "later", per_user=2)
    before = _state(m)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(recluster_pass(m.db, slice_rows=1, pause=2.0, full=False)))
    thread.start()
    added, overlapped = [], 0
    while thread.is_alive() or not added:
        added += [r["id"] for r in m.add(f"fresh note {len(added)}", user_id=f"new{len(added) % 3}",
                                         infer=False)["results"]]
        ids, _, _, results = _state(m)
        assert results == before[3]
        assert len(ids) == len(set(ids)) == len(before[0]) + len(added)
        overlapped += thread.is_alive()
    thread.join()
    assert out["mode"] == "tail" and out["complete"] and overlapped >= 2
    ids, kw, ent, results = _state(m)
    assert results == before[3] and len(ids) == len(set(ids)) == len(before[0]) + len(added)
    assert set(kw) >= set(before[1]) and set(ent) >= set(before[2]) and all(r[2] == 1 for r in kw + ent)
    assert m.doctor().height == 0
    m.close()


def test_a_tail_pass_killed_inside_or_between_slices_loses_nothing(tmp_path):
    for where in ("inside", "between"):
        path = str(tmp_path / where / "store.duckdb")
        m = _sorted_store(path)
        first = _rows(m)
        _add_round(m, "later", per_user=2)
        before, runs = _state(m), read_runs(m.db)
        m.close()
        child = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), path=path, where=where, pass_args=", full=False")],
                               capture_output=True, text=True, timeout=120, check=False)
        assert child.returncode == 9, (where, child.stdout, child.stderr)
        m = _open(path)
        assert _state(m) == before, where           # the committed slices replayed, the open one gone
        assert read_runs(m.db) == runs, where   # still one run: the tail is sorted again next time
        out = recluster_pass(m.db, slice_rows=10, full=False)
        assert out["mode"] == "tail" and out["complete"], where
        assert _state(m) == before and _runs_of([r[2] for r in _rows(m)]) == 2, where
        assert [r[1] for r in _rows(m)[:len(first)]] == [r[1] for r in first], where
        assert m.doctor().height == 0, where
        m.close()


def test_a_pass_runs_duckdb_on_its_threads_and_gives_the_setting_back(store_path):
    m = _sorted_store(store_path)
    db = m.db
    setting = "SELECT current_setting('threads')"
    before = db.scalar(setting)
    during: list[int] = []
    db.commit_listeners.append(lambda d: during.append(d.scalar(setting)))
    _add_round(m, "later", per_user=1)
    during.clear()
    out = recluster_pass(db, slice_rows=5, full=False, threads=1)
    assert out["complete"] and len(during) >= 2 and set(during) == {1}
    assert db.scalar(setting) == before and before != 1
    state = auto_state(db)                  # the store's own background pass: PASS_THREADS by default
    state.min_rows, state.share, state.slice_rows, state.pause = 1, 0.01, 5, 0.0
    during.clear()
    _add_round(m, "again", per_user=1)
    state.wait(30)
    assert state.runs and state.runs[-1]["complete"] and state.threads == PASS_THREADS == 1
    assert during[0] == before and 1 in during and db.scalar(setting) == before   # adds on the store's, the pass on 1
    m.close()


def test_a_failed_background_pass_is_not_restarted_at_every_commit(store_path):
    m = _open(store_path)
    _add_round(m, "first")
    m.close()
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.1)
    db = m.db
    state = auto_state(db)
    state.wait(30)
    assert state.runs and state.error is None
    def fail(name, sql, params, took):                  # every pass fails from here on (a statement error)
        if name == "optimize:refill:memories":
            raise RuntimeError("disk full")
    db.trace = fail
    state.every_s = 0
    _add_round(m, "second")
    state.wait(30)
    assert state.error is not None and len(state.runs) == 1
    failed_at = state.failed_at
    _add_round(m, "third")                              # due again, but no second try within RETRY_S
    assert not state.running() and state.failed_at == failed_at
    m.close()


def test_run_ends_written_wrong_behind_the_apis_back_count_as_no_run(store_path):
    m = _sorted_store(store_path)
    db = m.db
    for broken in ('[{"memories": {"end": 3, "keys": [["a", "b"]]}}]', '{"x": 1}', 'not json'):
        db.run("x", [broken], sql="INSERT OR REPLACE INTO store_meta VALUES ('cluster_runs', ?)", writes=True)
        assert read_runs(db) == [] and auto_state(db).count(db, force=True) == 60
    _add_round(m, "later", per_user=1)
    assert recluster_pass(db, slice_rows=50, full=False)["mode"] == "full"
    m.close()


def test_after_a_reset_the_lost_run_counts_every_new_memory_as_tail(store_path):
    m = _sorted_store(store_path)
    state = auto_state(m.db)
    assert state.count(m.db, force=True) == state.clustered_rows == 60
    m.reset()                                           # store_meta (and its run ends) survive a reset
    m.db.run("queries/admin/checkpoint")
    _add_round(m, "new", per_user=2)
    assert state.count(m.db, force=True) == 20 and state.clustered_rows == 0     # all tail: due again
    out = recluster_pass(m.db, slice_rows=50, full=False)
    assert out["mode"] == "full" and out["complete"] and _runs_of([r[2] for r in _rows(m)]) == 1
    m.close()


def _add_shuffled(m: Memory, rounds: int, seed: int = 7, first: int = 0) -> None:
    """Adds by users in random order, one memory each (a tail of many users' adds)."""
    rng = random.Random(seed)
    for r in range(first, first + rounds):
        users = list(USERS)
        rng.shuffle(users)
        for u in users:
            m.add(f"{u} round {r} about city{r % 4} and topic{r % 5}", user_id=u, infer=False)


def _forget_runs(m: Memory) -> None:
    """What a store sorted by an earlier version holds: the count of sorted memories, no run ends."""
    m.db.run("x", sql="DELETE FROM store_meta WHERE key = 'cluster_runs'", writes=True)
    assert read_runs(m.db) == []


def test_a_store_sorted_by_an_earlier_version_gets_a_tail_pass_not_a_full_one(store_path, monkeypatch):
    monkeypatch.setattr(cluster_runs, "ADOPT_GAP", 4)    # this store's sorted run is 60 rows long
    m = _sorted_store(store_path)
    _forget_runs(m)
    sorted_part = {t: _rows(m, t) for t in TABLES}
    _add_shuffled(m, rounds=4)
    before = _state(m)
    out = recluster_pass(m.db, slice_rows=10, full=False)
    assert out["mode"] == "tail" and out["complete"] and out["memories"] == 4 * len(USERS), out
    for t in TABLES:
        rows = _rows(m, t)
        assert rows[:len(sorted_part[t])] == sorted_part[t], t          # the sorted rows did not move
        assert _runs_of([r[2] for r in rows[len(sorted_part[t]):]]) == 1, t
    assert _state(m) == before and len(read_runs(m.db)) == 2
    m.close()


def test_rows_in_append_order_are_not_taken_for_a_sorted_run_whatever_the_count_says(store_path, monkeypatch):
    monkeypatch.setattr(cluster_runs, "ADOPT_GAP", 4)
    m = _open(store_path)
    _add_shuffled(m, rounds=8)
    db = m.db
    db.run("queries/set_clustered_rows", {"rows": 80}, writes=True)    # a count that does not fit the rows
    assert cluster_runs.adopt_sorted(db, 80) is None
    out = recluster_pass(db, slice_rows=20, full=False)
    assert out["mode"] == "full" and out["complete"] and _runs_of([r[2] for r in _rows(m)]) == 1
    m.close()


def test_a_store_sorted_by_an_earlier_version_starts_its_tail_pass_at_tail_rows(store_path, monkeypatch):
    monkeypatch.setattr(cluster_runs, "ADOPT_GAP", 4)
    m = _sorted_store(store_path)
    _forget_runs(m)
    m.close()
    m = _open(store_path, auto_cluster_min_rows=10, auto_cluster_share=0.5)
    state = auto_state(m.db)
    state.every_s = 0
    state.tail_rows = 12
    _add_shuffled(m, rounds=1)                          # 10 new of 70: under both limits
    assert not state.runs and not state.running()
    _add_shuffled(m, rounds=1, seed=8, first=1)         # 20 > tail_rows (the share: 40)
    state.wait(30)
    assert state.runs and state.runs[-1]["mode"] == "tail" and state.error is None, (state.runs, state.error)
    assert len(read_runs(m.db)) == 2
    m.close()
