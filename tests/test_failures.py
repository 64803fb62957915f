"""Failure semantics: a failure at any step or table write of add/update/delete leaves every table
exactly as it was (row counts AND contents), and the caller gets an error naming the failed point.

The add scenario runs through the real `openai` client against ScriptedOpenAIServer so that every
projection is written (links, supersession, history, pruning); a test checks that the scenario
really reaches every fault point, so an injected fault is never vacuous.
"""
from __future__ import annotations

import contextlib
import json
import re

import pytest

import memstore.pipeline.add as add_pipeline
from memstore import Memory, StoreWriteError
from memstore.core.errors import ConfigError, LLMUnavailableError, ReadOnlyError
from memstore.pipeline.add import MODEL_STEPS, TEXT_STEPS, WRITE_STEPS, PipelineStepError, commit_adds
from memstore.testing.openai_server import ScriptedOpenAIServer

# Fault points are the Database's own (memstore/store/database.py): every table insert
# ("write:<table>"), every write statement ("write:<statement>") and the COMMIT.
ADD_POINTS = ("write:insert_entities", "write:memories", "write:entity_postings", "write:keyword_postings",
              "write:memory_links", "write:history", "write:messages", "write:extraction_runs",
              "write:supersede_memories", "write:prune_messages_by_id", "write:memory_sources", "commit")
STEPS = tuple(s.__name__ for s in TEXT_STEPS + MODEL_STEPS + WRITE_STEPS)
UPDATE_POINTS = ("write:update_memory", "write:update_memory_slot", "write:delete_entity_postings",
                 "write:delete_keyword_postings",
                 "write:insert_entities", "write:entity_postings", "write:drop_unposted_entities",
                 "write:keyword_postings", "write:history", "commit")
DELETE_POINTS = ("write:history", "write:delete_memories", "commit")
# The batched writer (group commit) closes a unit's superseded memories in one statement at flush.
BATCHED_POINTS = tuple("write:supersede_memories_batch" if p == "write:supersede_memories" else p
                       for p in ADD_POINTS)


def snapshot(m: Memory) -> dict[str, list]:
    """Every row of every base table (sorted), so before/after compare counts and contents."""
    tables = [r[0] for r in m.db.rows("t", sql="SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'")]
    assert {"memories", "entity_postings", "keyword_postings", "memory_links", "history", "messages",
            "extraction_runs", "entities"} <= set(tables)
    return {t: sorted(m.db.rows("t", sql=f'SELECT * FROM "{t}"'), key=repr) for t in sorted(tables)}


def record_points(m: Memory) -> list[str]:
    """Record the fault points a call passes (wrapping the Database's checkpoint)."""
    seen: list[str] = []
    original = m.db.checkpoint

    def checkpoint(point: str) -> None:
        seen.append(point)
        original(point)
    m.db.checkpoint = checkpoint  # type: ignore[method-assign]
    return seen


@contextlib.contextmanager
def fault_at(m: Memory, point: str):
    """Make the Database raise at one named fault point for the duration of the block."""
    m.db.faults = {point}
    try:
        yield
    finally:
        m.db.faults = set()


def short_id(prompt: str, text: str) -> str:
    found = re.search(rf"^(m\d+): {re.escape(text)}$", prompt, re.M)
    if not found:
        raise LookupError(f"{text!r} not shown to the model")
    return found.group(1)


def scenario_answer(body: dict) -> str:
    """The model's answer to the second add: a superseding fact with a link, a duplicate, a new fact."""
    prompt = body["messages"][-1]["content"]
    if "I moved to Seattle" not in prompt:
        raise LookupError("unexpected prompt")
    return json.dumps({"facts": [
        {"text": "Alice moved to Seattle", "supersedes": [short_id(prompt, "Alice lives in Boston")],
         "linked_memory_ids": [short_id(prompt, "Alice likes jazz")]},
        {"text": "Alice likes jazz"},
        {"text": "Bob is Alice's friend in Seattle", "linked_memory_ids": [short_id(prompt, "Alice works at Acme")]},
    ]})


SEED = json.dumps({"facts": ["Alice lives in Boston", "Alice likes jazz", "Alice works at Acme"]})
NEW_MESSAGE = "I moved to Seattle, my friend Bob lives there. Still into jazz!"


def open_seeded(path: str, srv: ScriptedOpenAIServer) -> Memory:
    m = Memory(path, config={"llm": {"provider": "openai", "base_url": srv.base_url, "api_key": "test",
                                     "model": "scripted-model", "max_retries": 0, "timeout": 5}})
    srv.push_chat(SEED)
    # ten messages: the next add pushes the oldest out (prune_messages really deletes a row)
    out = m.add([{"role": "user", "content": f"message {i} about Boston, jazz and Acme"} for i in range(10)],
                user_id="alice")
    assert len(out["results"]) == 3
    srv.chat_responder = scenario_answer
    return m


@pytest.fixture(scope="module")
def llm_store(tmp_path_factory):
    with ScriptedOpenAIServer() as srv:
        m = open_seeded(str(tmp_path_factory.mktemp("faults") / "store.duckdb"), srv)
        yield m
        m.close()


def test_scenario_reaches_every_fault_point_and_writes_every_table(tmp_path):
    with ScriptedOpenAIServer() as srv:
        m = open_seeded(str(tmp_path / "s.duckdb"), srv)
        before = snapshot(m)
        seen = record_points(m)
        out = m.add(NEW_MESSAGE, user_id="alice")
        after = snapshot(m)
        m.close()
    assert set(seen) == set(ADD_POINTS), "a new fault point must be added to ADD_POINTS"
    assert {r["event"] for r in out["results"]} == {"ADD", "SUPERSEDE"}
    assert out["extraction"]["deduplicated"] == 1
    changed = {t for t in after if after[t] != before[t]}
    assert changed >= {"memories", "entities", "entity_postings", "keyword_postings", "memory_links", "history",
                       "messages", "extraction_runs"}
    assert len(after["messages"]) == len(before["messages"]) == 10  # one in, the oldest pruned


@pytest.mark.parametrize("point", ADD_POINTS)
def test_add_fault_leaves_store_unchanged(llm_store, point):
    before = snapshot(llm_store)
    with fault_at(llm_store, point):
        with pytest.raises(StoreWriteError) as err:
            llm_store.add(NEW_MESSAGE, user_id="alice")
    assert point in str(err.value)
    assert err.value.step == point and "rolled back" in str(err.value)
    assert snapshot(llm_store) == before


def crash_after(step):
    """The step runs (its writes reach the writer), then crashes."""
    def crashing(state, rt, *args):
        step(state, rt, *args)
        raise RuntimeError("injected crash")
    crashing.__name__ = step.__name__
    return crashing


@pytest.mark.parametrize("name", STEPS)
def test_a_crash_in_any_step_stores_nothing_and_names_the_step(llm_store, monkeypatch, name):
    for attr in ("TEXT_STEPS", "MODEL_STEPS", "WRITE_STEPS"):
        steps = getattr(add_pipeline, attr)
        monkeypatch.setattr(add_pipeline, attr, tuple(crash_after(s) if s.__name__ == name else s for s in steps))
    before = snapshot(llm_store)
    with pytest.raises(PipelineStepError) as err:
        llm_store.add(NEW_MESSAGE, user_id="alice")
    assert err.value.fields["step"] == name and name in str(err.value)
    assert snapshot(llm_store) == before


# -- the same faults against the batched writer (group commit: two adds in one unit) ---------------

def _group(m: Memory) -> list:
    """Two prepared adds: the scenario's add for alice, and one for carol."""
    from memstore.pipeline.add import prepare

    states = [m._add_state(NEW_MESSAGE, user_id="alice", agent_id=None, run_id=None, metadata=None, infer=True,
                           prompt=None, timestamp=None, expiration_date=None, actor_id=None),
              m._add_state("I like tea and I live in Lisbon", user_id="carol", agent_id=None, run_id=None,
                           metadata=None, infer=False, prompt=None, timestamp=None, expiration_date=None,
                           actor_id=None)]
    return [prepare(st, m._rt) for st in states]


def test_the_batched_scenario_reaches_every_fault_point(tmp_path):
    with ScriptedOpenAIServer() as srv:
        m = open_seeded(str(tmp_path / "b.duckdb"), srv)
        group = _group(m)
        seen = record_points(m)
        out = commit_adds(group, m._rt)
        m.close()
    assert not any(isinstance(o, Exception) for o in out), out
    assert set(seen) == set(BATCHED_POINTS), "a new fault point must be added to BATCHED_POINTS"


@pytest.mark.parametrize("point", BATCHED_POINTS)
def test_batched_fault_leaves_store_unchanged(llm_store, point):
    group = _group(llm_store)
    before = snapshot(llm_store)
    with fault_at(llm_store, point):
        out = commit_adds(group, llm_store._rt)
    failed = [o for o in out if isinstance(o, StoreWriteError)]
    assert failed and all(o.step == point for o in failed)
    # the unit failed and each add was retried alone: whichever add does not reach the point commits
    committed = [o for o in out if not isinstance(o, Exception)]
    after = snapshot(llm_store)
    if not committed:
        assert after == before
    else:
        assert all(o.scope.user_id == "carol" for o in committed)
        def not_carol(snap):     # every row but carol's (entities are shared by all scopes)
            return {t: [r for r in rows if "carol" not in repr(r)] for t, rows in snap.items() if t != "entities"}
        assert not_carol(after) == not_carol(before)
        llm_store.delete_all(user_id="carol")


@pytest.mark.parametrize("name", [s.__name__ for s in WRITE_STEPS])
def test_batched_crash_in_any_write_step_stores_nothing(llm_store, monkeypatch, name):
    group = _group(llm_store)
    monkeypatch.setattr(add_pipeline, "WRITE_STEPS",
                        tuple(crash_after(s) if s.__name__ == name else s for s in add_pipeline.WRITE_STEPS))
    before = snapshot(llm_store)
    out = commit_adds(group, llm_store._rt)
    assert all(isinstance(o, PipelineStepError) and o.fields["step"] == name for o in out), out
    assert snapshot(llm_store) == before


def test_real_transaction_conflict_mid_commit_rolls_back_everything(llm_store):
    """Not injected: another transaction holds the oldest message, so pruning (the last write of the
    commit, after memories, postings, links and history were written) hits a real conflict."""
    before = snapshot(llm_store)
    other = llm_store.db._con.cursor()
    other.execute("BEGIN TRANSACTION")
    other.execute("DELETE FROM messages")
    try:
        with pytest.raises(StoreWriteError, match="prune_messages") as err:
            llm_store.add(NEW_MESSAGE, user_id="alice")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert "Conflict" in str(err.value.cause)
    assert snapshot(llm_store) == before


def test_embedding_endpoint_failures_store_nothing(tmp_path):
    """Not injected: the real openai client against an endpoint that fails or answers the wrong size."""
    def broken(texts):
        raise RuntimeError("model not loaded")

    with ScriptedOpenAIServer(embed_responder=broken) as srv:
        m = Memory(str(tmp_path / "e.duckdb"),
                   config={"embedder": {"provider": "openai", "base_url": srv.base_url, "api_key": "t",
                                        "model": "emb", "dims": 384, "max_retries": 0, "timeout": 5}})
        before = snapshot(m)
        with pytest.raises(LLMUnavailableError) as err:
            m.add("I live in Boston", user_id="alice")
        assert err.value.retryable
        after = snapshot(m)
        # only the trace of the failed call: no memory, no message
        assert after["memories"] == after["messages"] == []
        assert [r for r in after["extraction_runs"] if "llm_error" not in r] == []
        assert len(after["extraction_runs"]) == 1
        before.pop("extraction_runs"), after.pop("extraction_runs")
        assert after == before

        srv.embed_responder = lambda texts: [[1.0] * 100 for _ in texts]
        before = snapshot(m)
        with pytest.raises(ConfigError, match="100-d") as err:
            m.add("I live in Boston", user_id="alice")
        assert err.value.fields["key"] == "embedder.dims"
        assert snapshot(m) == before
        m.close()


def test_read_only_store_refuses_every_write_clearly(tmp_path):
    path = str(tmp_path / "ro.duckdb")
    with Memory(path) as m:
        mid = m.add("I live in Boston", user_id="alice")["results"][0]["id"]
    with Memory(path, config={"read_only": True}) as ro:
        before = snapshot(ro)
        assert [r["id"] for r in ro.get_all(user_id="alice")["results"]] == [mid]
        for call in (lambda: ro.add("I like jazz", user_id="alice"),
                     lambda: ro.add("I like jazz", user_id="alice", infer=False),
                     lambda: ro.update(mid, text="Alice lives in Seattle"),
                     lambda: ro.delete(mid), lambda: ro.delete_all(user_id="alice"), ro.reset):
            with pytest.raises(ReadOnlyError, match="read-only") as err:
                call()
            assert "read_only" in str(err.value)  # says what to do
        assert snapshot(ro) == before


# -- update and delete ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plain_store(tmp_path_factory):
    m = Memory(str(tmp_path_factory.mktemp("faults") / "plain.duckdb"))
    m.add("I live in Boston and I work at Google. My sister Maria is a nurse.", user_id="alice")
    m.add("I like hiking in the Alps", user_id="bob")
    yield m
    m.close()


def _alice_boston(m: Memory) -> str:
    return next(r["id"] for r in m.get_all(user_id="alice")["results"] if "Boston" in r["memory"])


def test_update_and_delete_reach_every_fault_point(tmp_path):
    with Memory(str(tmp_path / "p.duckdb")) as m:
        m.add("I live in Boston and I work at Google", user_id="alice")
        mid = _alice_boston(m)
        seen = record_points(m)
        m.update(mid, text="Alice lives in Seattle near Amazon")
        assert set(seen) == set(UPDATE_POINTS)
        seen.clear()
        m.delete(mid)
        assert set(seen) == set(DELETE_POINTS)
        seen.clear()
        m.delete_all(user_id="alice")
        assert set(seen) == set(DELETE_POINTS)


@pytest.mark.parametrize("point", UPDATE_POINTS)
def test_update_fault_leaves_store_unchanged(plain_store, point):
    mid = _alice_boston(plain_store)
    before = snapshot(plain_store)
    with fault_at(plain_store, point):
        with pytest.raises(StoreWriteError) as err:
            plain_store.update(mid, text="Alice lives in Seattle near Amazon", metadata={"source": "fix"})
    assert err.value.step == point
    assert snapshot(plain_store) == before


@pytest.mark.parametrize("point", DELETE_POINTS)
@pytest.mark.parametrize("how", ["delete", "delete_all"])
def test_delete_fault_leaves_store_unchanged(plain_store, point, how):
    mid = _alice_boston(plain_store)
    before = snapshot(plain_store)
    with fault_at(plain_store, point):
        with pytest.raises(StoreWriteError) as err:
            plain_store.delete(mid) if how == "delete" else plain_store.delete_all(user_id="alice")
    assert err.value.step == point
    assert snapshot(plain_store) == before
