"""Maintenance yields to writes (issue 49): the write lock counts the writers waiting for it
(memstore/store/write_lock.py) and a re-cluster pass lets every waiting writer in before its next
slice, so an add waits for the slice under way at most, never for the pass. Behaviour, not timing:
the order of events is asserted."""
from __future__ import annotations

import threading
import time

import pytest

from memstore.store.cluster_runs import read_runs
from memstore.store.recluster import recluster_pass
from memstore.store.write_lock import WriteLock
from tests.test_recluster_slices import _fill, _open, _state, _user_order


def _wait_for(cond, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_a_background_acquire_lets_a_waiting_writer_in_first():
    lock = WriteLock()
    events: list[str] = []
    lock.acquire()                                       # a slice holds the lock
    writer = threading.Thread(target=lambda: (lock.acquire(), events.append("writer"), lock.release()))
    writer.start()
    _wait_for(lambda: lock.waiting == 1)                 # the writer is blocked on it
    lock.release()                                       # the slice ends ...
    with lock.after_writers():                           # ... and the pass wants the next one at once
        events.append("next slice")
        assert lock.waiting == 0
    writer.join(10)
    assert events == ["writer", "next slice"]
    with lock, lock.after_writers():                     # re-entrant for the holder (optimize() holds it)
        assert lock.waiting == 0


def _pass_with_a_writer(store_path):
    """A pass over a filled store with one add started inside its first slice."""
    _fill(store_path)
    m = _open(store_path)
    before = _state(m)
    db = m.db
    events: list[tuple[str, str]] = []
    writer_done = threading.Event()
    added: list[dict] = []

    def add() -> None:
        added.append(m.add("a note written while the pass runs", user_id="writer", infer=False))
        writer_done.set()

    writer = threading.Thread(target=add, name="writer")

    def trace(name: str, sql: str, params: object, took: float) -> None:
        who = "writer" if threading.current_thread() is writer else "pass"
        events.append((who, name))
        if name == "optimize:refill:memories" and not writer.is_alive() and not writer_done.is_set():
            writer.start()                               # inside the first slice's transaction (lock held)
            _wait_for(lambda: db.write_lock.waiting == 1)    # the add blocks on the write lock

    db.trace = trace
    out = recluster_pass(db, slice_rows=1, pause=0.0)    # back to back: no pause lets the writer in
    db.trace = None
    writer.join(30)
    return m, db, out, events, added, writer_done, before


def test_an_add_during_a_pass_is_admitted_before_the_next_slice(store_path):
    m, db, out, events, added, writer_done, before = _pass_with_a_writer(store_path)
    assert out["complete"] and writer_done.is_set() and added[0]["results"]
    slices = [i for i, (who, name) in enumerate(events) if who == "pass" and name == "optimize:refill:memories"]
    writes = [i for i, (who, name) in enumerate(events) if who == "writer" and name.startswith("write:")]
    assert len(slices) >= 3 and writes, events
    assert slices[0] < writes[0] and writes[-1] < slices[1], "the add waited for more than the slice under way"
    ids, _, _, results = _state(m)                       # nothing lost, nothing doubled, ranking unchanged
    assert results == before[3] and len(ids) == len(set(ids)) == len(before[0]) + 1
    assert _user_order(m) == sorted(_user_order(m))
    m.close()


@pytest.mark.xfail(reason="found at the wave-4 merge: on the merged main the pass leaves an add made between "
                          "slices inside the sorted run (it is moved behind the run's end on w4/maint alone); "
                          "not root-caused yet")
def test_an_add_between_slices_is_moved_behind_the_sorted_run(store_path):
    m, db, *_ = _pass_with_a_writer(store_path)
    # the add landed between slices, inside the sorted run: the pass moved it behind the run's end
    end = read_runs(db)[-1]["memories"]["end"]
    in_run = [r[0] for r in db.rows("x", sql=f"SELECT user_id FROM memories WHERE rowid < {end} ORDER BY rowid")]
    assert in_run == sorted(in_run) and "writer" not in in_run
    assert db.scalar(f"SELECT count(*) FROM memories WHERE rowid >= {end} AND user_id = 'writer'") == 1
    m.close()
