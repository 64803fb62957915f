"""The in-process scope cache (store/scope_cache.py) must never make add() disagree with the store:
whatever changed the store — the API, raw SQL behind its back, another Memory on the same file —
the next add de-duplicates against what is really stored."""
from __future__ import annotations

import datetime as dt
import random

import pytest

from memstore import Memory

HASHING = {"embedder": {"provider": "hashing"}}
SCOPE = "u=alice|a=|r="


def current_ids(m: Memory) -> set[str]:
    """What the store itself says is current for alice (the cache must agree)."""
    sql = ("SELECT id FROM memories WHERE scope_key = ? AND invalidated_at IS NULL "
           "AND (expiration_date IS NULL OR expiration_date > now())")
    return {r[0] for r in m.db.rows("q", [SCOPE], sql=sql)}


def cached_ids(m: Memory) -> set[str]:
    e = m.db.scope_cache.entry(m.db, SCOPE)
    alive = e._current(dt.datetime.now(dt.timezone.utc).replace(tzinfo=None))
    return {mid for mid, ok in zip(e.ids, alive) if ok}


@pytest.fixture
def m(store_path):
    mem = Memory(store_path, config=HASHING)
    yield mem
    mem.close()


def test_warm_adds_are_served_from_the_cache(m):
    m.add("I live in Boston", user_id="alice")
    stats = m.db.scope_cache.stats
    misses = stats["misses"]
    m.add("I like jazz", user_id="alice")
    again = m.add("I live in Boston", user_id="alice")
    assert again["results"] == [] and again["extraction"]["deduplicated"] == 1
    assert stats["misses"] == misses and stats["hits"] >= 2      # no scan after the first add
    assert cached_ids(m) == current_ids(m)


def test_a_raw_sql_delete_behind_the_api_is_noticed(m):
    first = m.add("I live in Boston", user_id="alice")["results"][0]["id"]
    m.db.con.execute("DELETE FROM memories WHERE id = ?", [first])      # not through memstore
    again = m.add("I live in Boston", user_id="alice")
    assert [r["event"] for r in again["results"]] == ["ADD"]             # stored again, not "duplicate"
    assert m.db.scope_cache.stats["file_changes"] >= 1


@pytest.mark.parametrize("change", ["delete", "delete_all", "update", "expire", "reset"])
def test_api_changes_are_seen_by_the_next_add(m, change):
    mid = m.add("I live in Boston", user_id="alice")["results"][0]["id"]
    if change == "delete":
        m.delete(mid)
    elif change == "delete_all":
        m.delete_all(user_id="alice")
    elif change == "update":
        m.update(mid, text="Alice lives in Denver")
    elif change == "expire":
        m.db.run("x", {"id": mid}, sql="UPDATE memories SET expiration_date = now() - INTERVAL 1 DAY WHERE id = $id",
                 writes=True)          # a write outside a transaction must say so
    else:
        m.reset()
    again = m.add("I live in Boston", user_id="alice")
    assert again["results"][0]["event"] == "ADD", change     # update: it also supersedes Denver
    assert cached_ids(m) == current_ids(m)


def test_two_memories_on_one_file_share_what_they_know(store_path):
    a = Memory(store_path, config=HASHING)
    b = Memory(store_path, config=HASHING)
    try:
        a.add("I live in Boston", user_id="alice")
        assert b.add("I live in Boston", user_id="alice")["results"] == []   # b sees a's write
        mid = b.get_all(filters={"user_id": "alice"})["results"][0]["id"]
        b.delete(mid)
        assert [r["event"] for r in a.add("I live in Boston", user_id="alice")["results"]] == ["ADD"]
    finally:
        a.close()
        b.close()


def test_supersession_closes_cached_rows(m):
    m.add("I live in Boston", user_id="alice")
    out = m.add("I moved to Seattle", user_id="alice")
    assert {r["event"] for r in out["results"]} == {"ADD", "SUPERSEDE"}
    assert cached_ids(m) == current_ids(m)
    # Boston is no longer current, so saying it again stores it again (and supersedes Seattle)
    again = m.add("I live in Boston", user_id="alice")
    assert "ADD" in {r["event"] for r in again["results"]}
    assert cached_ids(m) == current_ids(m)


@pytest.mark.parametrize("rows", [200_000, 3, 0])   # whole store / per scope with eviction / off
def test_random_sequences_keep_cache_and_store_in_step(store_path, rows):
    m = Memory(store_path, config={**HASHING, "scope_cache_rows": rows, "messages_kept": 3})
    rng = random.Random(3)
    facts = ["I live in Boston", "I moved to Seattle", "I like jazz", "I like tea", "I work at Acme",
             "I am vegetarian", "My sister is Maria", "I play chess"]
    for step in range(40):
        op = rng.random()
        ids = sorted(current_ids(m))
        if op < 0.6 or not ids:
            m.add(rng.choice(facts), user_id="alice")
        elif op < 0.75:
            m.delete(rng.choice(ids))
        elif op < 0.85:
            m.update(rng.choice(ids), text=rng.choice(facts).replace("I ", "Alice ", 1))
        elif op < 0.95:
            m.add(rng.choice(facts), user_id="bob")
        else:
            m.db.con.execute("DELETE FROM memories WHERE id = ?", [rng.choice(ids)])
        assert cached_ids(m) == current_ids(m), f"step {step}"
        n_msgs = m.db.scalar("SELECT count(*) FROM messages WHERE user_id = 'alice'")
        assert n_msgs == min(3, m.db.scalar("SELECT count(*) FROM extraction_runs WHERE user_id = 'alice'")), step
    current_texts = {r[0] for r in m.db.rows("q", [sorted(current_ids(m))], sql="SELECT memory FROM memories WHERE list_contains(?, id)")}
    dup = m.add(facts[0], user_id="alice")       # whatever happened, a current fact is not stored twice
    added = {r["memory"] for r in dup["results"] if r["event"] == "ADD"}
    assert ("Alice lives in Boston" in added) == ("Alice lives in Boston" not in current_texts)
    m.close()


def test_pruning_counts_messages_already_stored_before_this_process(store_path):
    with Memory(store_path, config={**HASHING, "messages_kept": 4}) as first:
        first.add([{"role": "user", "content": f"old {i}"} for i in range(3)], user_id="alice", infer=False)
    with Memory(store_path, config={**HASHING, "messages_kept": 4}) as second:   # a fresh cache entry
        second.add([{"role": "user", "content": f"new {i}"} for i in range(2)], user_id="alice", infer=False)
        kept = [r[0] for r in second.db.rows("q", sql="SELECT content FROM messages ORDER BY created_at")]
        assert kept == ["old 1", "old 2", "new 0", "new 1"]


def test_each_memory_owns_its_cache_and_sees_the_others_writes(store_path):
    """Two Memory objects on one file: each cache has its own config's size (no opener resizes
    another's), a fact one stores is a duplicate for the other (it sees the files change), and
    closing a Memory frees its copies."""
    a = Memory(store_path, config={**HASHING, "scope_cache_rows": 1000})
    b = Memory(store_path, config={**HASHING, "scope_cache_rows": 0})
    assert a.db.scope_cache is not b.db.scope_cache
    assert (a.db.scope_cache.max_rows, b.db.scope_cache.max_rows) == (1000, 0)
    a.add("I live in Boston", user_id="alice")                # a's cache now holds alice's scope
    assert a.db.scope_cache.entries
    b.add("I like jazz", user_id="alice")                     # written behind a's back
    assert [r["event"] for r in a.add("I like jazz", user_id="alice")["results"]] == []
    a.close()
    assert not a.db.scope_cache.entries                       # nothing kept for a closed Memory
    assert {r["memory"] for r in b.get_all(user_id="alice")["results"]} == {"Alice lives in Boston", "Alice likes jazz"}
    b.close()


def test_concurrent_adds_and_deletes_never_store_a_current_fact_twice(m):
    import threading

    facts = [f"I like topic number {i}" for i in range(12)]
    errors: list[BaseException] = []

    def adder(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(15):
                m.add(rng.choice(facts), user_id="alice")
        except BaseException as exc:
            errors.append(exc)

    def deleter() -> None:
        rng = random.Random(99)
        try:
            for _ in range(8):
                ids = sorted(current_ids(m))
                if ids:
                    m.delete(rng.choice(ids))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=adder, args=(s,)) for s in range(3)] + [threading.Thread(target=deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    dup = m.db.scalar("SELECT count(*) FROM (SELECT hash FROM memories WHERE scope_key = ? AND invalidated_at IS NULL "
                      "GROUP BY hash HAVING count(*) > 1)", [SCOPE])
    assert dup == 0
    assert cached_ids(m) == current_ids(m)


def test_an_unclosed_memory_frees_its_cache_when_collected(store_path):
    import gc
    import weakref

    m = Memory(store_path, config=HASHING)
    m.add("I live in Boston", user_id="alice")
    cache = weakref.ref(m.db.scope_cache)
    assert cache() is not None and cache().entries
    del m
    gc.collect()
    assert cache() is None                 # no module keeps a closed or forgotten store's copies


def test_a_delete_drops_only_the_scopes_it_changed(m):
    """delete / update / purge / resolve say which scopes they change (Database.scopes_changed):
    their COMMIT drops those scopes' copies and keeps every other scope's, and dedupe stays right."""
    m.add("I live in Boston", user_id="alice")
    m.add("I like chess", user_id="bob")
    cache = m.db.scope_cache
    bob_entry = cache.entries["u=bob|a=|r="]
    gone = next(r["id"] for r in m.get_all(user_id="alice")["results"])
    m.delete(gone)
    assert "u=alice|a=|r=" not in cache.entries                 # alice's copy dropped
    assert cache.entries.get("u=bob|a=|r=") is bob_entry          # bob's kept: no reload
    assert [r["event"] for r in m.add("I like chess", user_id="bob")["results"]] == []          # still a duplicate
    assert [r["event"] for r in m.add("I live in Boston", user_id="alice")["results"]] == ["ADD"]  # deleted: new
    assert cached_ids(m) == current_ids(m)


def test_a_write_behind_the_cache_is_never_narrowed_by_a_declaration(m):
    """Raw SQL changed bob's scope behind memstore's back; a later delete in alice's scope must not
    keep bob's (stale) copy just because the delete named only alice."""
    m.add("I live in Boston", user_id="alice")
    m.add("I like chess", user_id="bob")
    m.db.raw_connection.execute("DELETE FROM memories WHERE user_id = 'bob'")
    m.delete(next(r["id"] for r in m.get_all(user_id="alice")["results"]))
    assert [r["event"] for r in m.add("I like chess", user_id="bob")["results"]] == ["ADD"]


def test_the_cached_slot_holders_match_the_sql_query(m):
    """Slot supersession reads the holders of a subject|slot from the scope's copy (no statement
    inside the write); sql/queries/current_slot_memories.sql is the reference it must agree with:
    superseded, expiring and slot-ending facts included."""
    m.add("I live in Boston", user_id="alice", timestamp="2023-01-01")
    m.add("I work at Acme", user_id="alice", timestamp="2023-02-01")
    m.add("I moved to Denver", user_id="alice", timestamp="2023-03-01")          # supersedes Boston
    m.add("I'm staying in Rome this week", user_id="alice", timestamp="2023-04-01",
          expiration_date="2023-04-08")                                         # an expired holder
    m.add("My sister Ana lives in Lisbon", user_id="alice", timestamp="2023-05-01")
    m.add("I quit my job at Acme", user_id="alice", timestamp="2023-06-01")      # ends a slot
    keys = [r[0] for r in m.db.rows("k", sql="SELECT DISTINCT subject || '|' || slot FROM memories "
                                               "WHERE slot IS NOT NULL")]
    assert len(keys) >= 3
    for now in (dt.datetime(2023, 4, 5), dt.datetime(2030, 1, 1)):
        sql = sorted(m.db.rows("queries/current_slot_memories", {"scope_key": SCOPE, "keys": keys, "now": now}))
        cached = sorted(m.db.scope_cache.entry(m.db, SCOPE).slot_holders(keys, now))
        assert cached == sql and sql, now
    m.db.scope_cache.invalidate()                 # the same after a reload from the store
    cached = sorted(m.db.scope_cache.entry(m.db, SCOPE).slot_holders(keys, dt.datetime(2030, 1, 1)))
    assert cached == sorted(m.db.rows("queries/current_slot_memories",
                                      {"scope_key": SCOPE, "keys": keys, "now": dt.datetime(2030, 1, 1)}))


def test_a_commit_by_another_connection_during_an_add_is_not_vouched_for(store_path, monkeypatch):
    """The cache checks the files once at BEGIN (no stat per lookup inside the unit) and again just
    before COMMIT: another Memory's add committed while ours was writing must not be recorded as
    seen, so the next add still finds that fact a duplicate."""
    import memstore.pipeline.add as add_pipeline

    a = Memory(store_path, config=HASHING)
    b = Memory(store_path, config=HASHING)
    a.add("I live in Boston", user_id="alice")                # a's cache holds alice's scope
    steps = add_pipeline.WRITE_STEPS
    fired: list[bool] = []

    def commit_rows_then_b_writes(state, rt, w):
        out = steps[-1](state, rt, w)
        if rt is a._rt and not fired:
            fired.append(True)
            b.add("I like jazz", user_id="alice")             # commits inside a's unit
        return out
    commit_rows_then_b_writes.__name__ = steps[-1].__name__
    monkeypatch.setattr(add_pipeline, "WRITE_STEPS", (*steps[:-1], commit_rows_then_b_writes))
    a.add("I like sushi", user_id="alice")
    monkeypatch.setattr(add_pipeline, "WRITE_STEPS", steps)
    assert fired
    assert [r["event"] for r in a.add("I like jazz", user_id="alice")["results"]] == []
    assert sorted(r["memory"] for r in a.get_all(user_id="alice")["results"]) == \
        ["Alice likes jazz", "Alice likes sushi", "Alice lives in Boston"]
    a.close()
    b.close()


def test_unchanged_since_knows_which_scopes_each_commit_changed(m):
    """Snapshots of a scope stay valid across commits that name other scopes; a commit that names
    none, a filter with no identity, or a generation older than the change log is never vouched for."""
    from memstore.store import scope_cache as sc

    db = m.db
    cache = db.scope_cache
    ana, bo_coach = (("user_id", "ana"),), (("user_id", "bo"), ("agent_id", "coach"))
    g0 = cache.current_generation(db)
    m.add("bo likes chess", user_id="bo", infer=False)                       # u=bo|a=|r=
    m.add("the coach says hi", user_id="bo", agent_id="coach", infer=False)  # u=bo|a=coach|r=
    assert cache.unchanged_since(db, g0, ana)
    assert not cache.unchanged_since(db, g0, bo_coach)
    g1 = cache.current_generation(db)
    m.add("ana likes tea", user_id="ana", infer=False)
    assert not cache.unchanged_since(db, g1, ana) and cache.unchanged_since(db, g1, bo_coach)
    assert not cache.unchanged_since(db, g1, ())                              # no identity: any write
    g2 = cache.current_generation(db)
    db.con.execute("UPDATE memories SET memory = memory || '.' WHERE user_id = 'bo'")   # behind the API: no scope said
    m.add("bo again", user_id="bo", infer=False)
    assert not cache.unchanged_since(db, g2, ana)
    g3 = cache.current_generation(db)
    for i in range(sc.CHANGE_LOG + 1):                      # more commits than the log keeps
        cache.after_commit(db, {"u=zed|a=|r="})
    assert not cache.unchanged_since(db, g3, ana)
    g4 = cache.current_generation(db)
    cache.after_commit(db, {"u=zed|a=|r="})
    assert cache.unchanged_since(db, g4, ana)
