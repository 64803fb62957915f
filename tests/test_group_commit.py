"""Group commit: many prepared adds in ONE transaction, each still atomic and exactly reported."""
from __future__ import annotations

import datetime as dt
import threading

import numpy as np
import pytest

from memstore import Memory
from memstore.governance.doctor import assert_store_healthy
from memstore.pipeline.add import commit_adds, prepare
from memstore.server.group_commit import GroupCommitter

CONFIG = {"embedder": {"provider": "hashing"}}


@pytest.fixture
def m(tmp_path):
    mem = Memory(str(tmp_path / "g.duckdb"), config=CONFIG)
    yield mem
    mem.close()


def _prepared(m, text, user="ana", **kw):
    state = m._add_state(text, user_id=user, agent_id=None, run_id=None, metadata=None, infer=kw.get("infer", True),
                         prompt=None, timestamp=kw.get("timestamp"), expiration_date=None, actor_id=None)
    return prepare(state, m._rt)


def test_a_group_sees_its_own_earlier_adds(m):
    states = [_prepared(m, "I live in Boston", timestamp="2023-01-01"),
              _prepared(m, "I live in Boston", timestamp="2023-01-02"),
              _prepared(m, "I moved to Seattle", timestamp="2023-06-01"),
              _prepared(m, "I play chess", user="bob")]
    out = commit_adds(states, m._rt)
    assert not any(isinstance(o, BaseException) for o in out)
    assert [r["event"] for r in out[0].results] == ["ADD"]
    assert [r for r in out[1].results if r["event"] != "NONE"] == []      # whole-scope dedupe (NONE: the source kept)
    assert out[1].facts[0].outcome.startswith("duplicate")
    events = sorted(r["event"] for r in out[2].results)
    assert events == ["ADD", "SUPERSEDE"]                                                # supersession in-group
    assert [r["memory"] for r in m.get_all(user_id="ana")["results"]] == ["Ana moved to Seattle"]
    assert [r["memory"] for r in m.get_all(user_id="bob")["results"]] == ["Bob plays chess"]
    assert_store_healthy(m)


def test_one_bad_add_does_not_fail_the_others(m):
    good1, bad, good2 = (_prepared(m, "I like tea", infer=False), _prepared(m, "I like rain", infer=False),
                         _prepared(m, "I like maps", infer=False))
    bad.facts[0].embedding = np.ones(3, np.float32)        # the wrong dimension: its INSERT fails
    out = commit_adds([good1, bad, good2], m._rt)
    assert isinstance(out[1], Exception) and not isinstance(out[0], Exception) and not isinstance(out[2], Exception)
    texts = sorted(r["memory"] for r in m.get_all(user_id="ana")["results"])
    assert texts == ["I like maps", "I like tea"]
    n_hist = m.sql("select count(*) as n from history").item()
    assert n_hist == 2                                     # nothing of the bad add, nothing twice
    assert_store_healthy(m)


def test_the_scope_cache_follows_a_group(m):
    m.add("I like tea", user_id="ana", infer=False)       # loads the cache
    cache = m.db.scope_cache
    changes = cache.stats["file_changes"]
    out = commit_adds([_prepared(m, "I like jazz", infer=False), _prepared(m, "I like chess", infer=False)], m._rt)
    assert all(not isinstance(o, BaseException) for o in out)
    again = m.add("I like jazz", user_id="ana", infer=False)
    assert [r["event"] for r in again["results"]] == ["NONE"] and again["extraction"]["deduplicated"] == 1
    assert cache.stats["file_changes"] == changes          # the cache was kept, not reloaded
    assert_store_healthy(m)


def test_concurrent_adds_are_committed_in_groups(m):
    gc = GroupCommitter(m)
    results, errors = {}, []

    def work(i):
        try:
            results[i] = gc.add(f"note number {i} about the garden", user_id=f"u{i % 3}", infer=False)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.close()
    assert not errors
    assert all(len(r["results"]) == 1 for r in results.values())
    assert gc.stats["adds"] == 24 and gc.stats["groups"] < 24       # some adds shared a transaction
    stored = sum(len(m.get_all(user_id=f"u{k}")["results"]) for k in range(3))
    assert stored == 24
    assert_store_healthy(m)


POINTS = ("write:insert_entities", "write:memories", "write:entity_postings", "write:keyword_postings", "write:history",
          "write:messages", "write:extraction_runs", "commit")


def _snapshot(m):
    tables = [r[0] for r in m.db.rows("t", sql="SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'")]
    return {t: sorted(m.db.rows("t", sql=f'SELECT * FROM "{t}"'), key=repr) for t in sorted(tables)}


@pytest.mark.parametrize("point", POINTS)
def test_a_fault_anywhere_in_a_group_leaves_the_store_as_it_was(m, point):
    m.add("I like tea", user_id="ana", infer=False)
    before = _snapshot(m)
    m.db.faults.add(point)
    out = commit_adds([_prepared(m, "I like jazz and Paris"), _prepared(m, "I like chess", user="bob")], m._rt)
    m.db.faults.discard(point)
    assert all(isinstance(o, Exception) and point in str(o) for o in out), out
    assert _snapshot(m) == before
    assert_store_healthy(m)


@pytest.mark.parametrize("point", POINTS)
def test_a_group_that_fails_once_is_committed_add_by_add(m, point):
    original = m.db.checkpoint
    fired = []

    def once(p):
        if p == point and not fired:
            fired.append(p)
            raise RuntimeError(f"injected fault at {p}")
        original(p)
    m.db.checkpoint = once
    out = commit_adds([_prepared(m, "I like jazz and Paris"), _prepared(m, "I like chess", user="bob")], m._rt)
    m.db.checkpoint = original
    assert fired and not any(isinstance(o, Exception) for o in out)
    assert len(m.get_all(user_id="ana")["results"]) >= 1 and len(m.get_all(user_id="bob")["results"]) == 1
    assert_store_healthy(m)


def test_pruning_inside_a_group_keeps_the_newest_messages(tmp_path):
    mem = Memory(str(tmp_path / "p.duckdb"), config={**CONFIG, "messages_kept": 3})
    states = [_prepared(mem, f"message number {i} about tea", infer=False) for i in range(6)]
    out = commit_adds(states, mem._rt)
    assert not any(isinstance(o, Exception) for o in out)
    kept = mem.sql("select content from messages order by created_at, id")["content"].to_list()
    assert len(kept) == 3
    mem.add("one more message", user_id="ana", infer=False)          # the cache agrees with the file
    assert mem.sql("select count(*) as n from messages").item() == 3
    assert_store_healthy(mem)
    mem.close()


def test_a_failed_add_is_put_back_as_prepared_so_a_retry_dedupes_again(m):
    m.add("I like tea", user_id="ana", infer=False)
    state = _prepared(m, "I like tea", infer=False)
    m.db.faults.add("commit")
    assert isinstance(commit_adds([state], m._rt)[0], Exception)
    m.db.faults.discard("commit")
    assert [f.outcome for f in state.facts] == ["pending"]        # not the rolled-back attempt's outcome
    retried = commit_adds([state], m._rt)[0]
    assert [r for r in retried.results if r["event"] != "NONE"] == [] and retried.facts[0].outcome == "duplicate"
    assert len(m.get_all(user_id="ana")["results"]) == 1
    assert_store_healthy(m)


def _closures(m):
    """(user, text, superseded_by's text, invalidated_at) of every closed memory, ids left out."""
    return m.sql("select a.user_id, a.memory, b.memory as by, a.invalidated_at from memories a "
                 "join memories b on a.superseded_by = b.id order by a.user_id, a.memory").rows()


def _stored_then(m, news):
    for user in ("ana", "bo", "cy"):
        m.add("I live in Boston", user_id=user, timestamp="2023-01-01")
        m.add("I work as a nurse", user_id=user, timestamp="2023-01-02")
    return [_prepared(m, text, user=user, timestamp=ts) for user, text, ts in news]


NEWS = [("ana", "I moved to Seattle", "2023-06-01"), ("bo", "I moved to Porto", "2023-06-02"),
        ("bo", "I work as a pilot now", "2023-06-03"), ("cy", "I moved to Oslo", "2022-06-01")]


def test_a_group_closes_the_stored_memories_it_supersedes_in_one_statement(m, tmp_path):
    """Every supersession of stored memories in a group is ONE statement at the end of the unit,
    and leaves exactly what the same adds leave one by one (cy's move predates her Boston
    fact: it is stored already closed by it)."""
    seen = []
    m.db.trace = lambda name, sql, p, dt: seen.append(name)
    out = commit_adds(_stored_then(m, NEWS), m._rt)
    assert not any(isinstance(o, BaseException) for o in out)
    assert [sorted(r["event"] for r in o.results) for o in out[:3]] == [["ADD", "SUPERSEDE"]] * 3
    closing = [n for n in seen if "supersede_memories" in n]
    assert closing == ["queries/supersede_memories_batch"]
    one = Memory(str(tmp_path / "one.duckdb"), config=CONFIG)
    try:
        _stored_then(one, [])
        for user, text, ts in NEWS:
            one.add(text, user_id=user, timestamp=ts)
        assert _closures(m) == _closures(one)
        assert len(_closures(m)) == 4          # the late Oslo fact is born closed by Boston
    finally:
        one.close()
    assert_store_healthy(m)


def test_a_scope_copy_that_is_wrong_about_a_stored_memory_rolls_the_group_back_and_retries(m):
    """The batched supersede trusts the scope cache's 'current'; if the store disagrees, the unit
    is rolled back and each add is committed again from the store: nothing is closed twice."""
    states = _stored_then(m, NEWS[:2])
    boston = m.sql("select id from memories where user_id = 'ana' and memory like '%Boston%'").item()
    nurse = m.sql("select id from memories where user_id = 'ana' and memory like '%nurse%'").item()
    m.db.run("queries/supersede_memories", {"ids": [boston], "scope_key": states[0].scope.key,
                 "at": states[0].now, "new_id": nurse, "now": states[0].now}, writes=True)   # behind the copy
    row = m.sql(f"select hash, memory, embedding, subject || '|' || slot as k, valid_from from memories "
                f"where id = '{boston}'").rows()[0]
    entry = m.db.scope_cache.entry(m.db, states[0].scope.key)
    assert entry.current(boston) is None
    entry.extend([boston], [row[0]], [row[1]], [row[2]], [None], [(row[3], row[4])])   # a stale copy
    out = commit_adds(states, m._rt)
    assert not any(isinstance(o, BaseException) for o in out)
    assert m.sql(f"select superseded_by from memories where id = '{boston}'").item() == nurse
    assert m.sql("select count(*) from history where event = 'SUPERSEDE'").item() == 1      # bo's only
    assert_store_healthy(m)


def _validity(m):
    """(user, text, valid_from, invalidated_at, superseded_by's text) of every memory, ids left out."""
    return m.sql("select a.user_id, a.memory, a.valid_from, a.invalidated_at, b.memory as by from memories a "
                 "left join memories b on a.superseded_by = b.id order by all").rows()


def _lived_in_austin(m):
    for user in ("ana", "bo", "cy"):
        m.add("I live in Austin", user_id=user, timestamp="2022-01-01")
    for user in ("ana", "bo"):
        m.add("I moved to Seattle", user_id=user, timestamp="2023-06-01")


# ana and bo: a late move lands inside Austin's closed interval (it is narrowed); cy: the group's own
# earlier add closes Austin, then a late move of the same group narrows that closure
LATE = [("ana", "I moved to Boston", "2023-01-01"), ("bo", "I moved to Lima", "2023-02-01"),
        ("cy", "I moved to Seattle", "2023-06-01"), ("cy", "I moved to Boston", "2023-01-01")]


def test_a_group_places_its_late_facts_with_one_read_and_one_closing_statement(m, tmp_path):
    """A group's late facts (older than their slot's holder) read the slot histories in ONE
    statement, and their narrowings join the unit's ONE closing statement (no UPDATE per late
    fact), leaving exactly what the same adds leave one by one."""
    _lived_in_austin(m)
    seen = []
    m.db.trace = lambda name, sql, p, dt: seen.append(name)
    out = commit_adds([_prepared(m, text, user=user, timestamp=ts) for user, text, ts in LATE], m._rt)
    m.db.trace = None
    assert not any(isinstance(o, BaseException) for o in out)
    assert [n for n in seen if "slot_history" in n] == ["queries/slot_history_batch"]
    assert [n for n in seen if "supersede" in n or "narrow" in n] == ["queries/supersede_memories_batch"]
    assert sorted(r["event"] for r in out[3].results) == ["ADD", "SUPERSEDE"]      # cy's Austin, narrowed
    one = Memory(str(tmp_path / "one.duckdb"), config=CONFIG)
    try:
        _lived_in_austin(one)
        for user, text, ts in LATE:
            one.add(text, user_id=user, timestamp=ts)
        assert _validity(m) == _validity(one)
        history = "select user_id, event, old_memory, new_memory from history order by all"
        assert m.sql(history).rows() == one.sql(history).rows()
    finally:
        one.close()
    austin = {r[0]: r[3] for r in _validity(m) if "Austin" in r[1]}
    assert {u: str(t)[:10] for u, t in austin.items()} == {"ana": "2023-01-01", "bo": "2023-02-01", "cy": "2023-01-01"}
    assert_store_healthy(m)


def test_a_late_fact_placed_on_a_stale_history_rolls_the_group_back_and_retries(m):
    """The closing statement changes a row only if it is still as the unit saw it: a history read
    that is wrong about a stored interval (made wrong here on purpose) rolls the group back, and
    each add is committed again from the store, so nothing is narrowed that should not be."""
    for text, ts in (("I live in Austin", "2022-01-01"), ("I moved to Lima", "2022-06-01"),
                     ("I moved to Seattle", "2023-06-01")):
        m.add(text, user_id="ana", timestamp=ts)
    austin = m.sql("select id from memories where memory like '%Austin%'").item()
    db, reads = m.db, []
    real = db.rows

    def stale(name, params=None, **kw):
        rows = real(name, params, **kw)
        if name == "queries/slot_history_batch":
            reads.append(name)
            if len(reads) == 1:         # the first read says Austin ran until Seattle (it ended at Lima)
                rows = [r[:4] + (dt.datetime(2023, 6, 1),) + r[5:] if r[2] == austin else r for r in rows]
        return rows
    db.rows = stale
    try:
        out = commit_adds([_prepared(m, "I moved to Boston", timestamp="2023-01-01"),
                           _prepared(m, "I play chess", user="bob")], m._rt)
    finally:
        del db.rows
    assert not any(isinstance(o, BaseException) for o in out)
    assert len(reads) == 2              # rolled back once, then the add alone read the store again
    ends = dict(m.sql("select memory, invalidated_at from memories where user_id = 'ana'").rows())
    assert {k.split()[-1]: str(v)[:10] for k, v in ends.items()} == {
        "Austin": "2022-06-01", "Lima": "2023-01-01", "Seattle": "None", "Boston": "2023-06-01"}
    assert_store_healthy(m)
