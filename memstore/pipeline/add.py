"""The add() pipeline: an ordered tuple of small steps; this module only sequences them.

validate → context → extract (ONE LLM call) → analyze (spaCy) → embed (batch) →
[write lock] dedupe (whole scope) → supersede by slot → build rows → commit (ONE transaction)

`prepare_add` runs the first part (no writes), `commit_add` the second; `commit_adds` commits many
prepared adds in ONE transaction (the server's group commit), each still atomic: if the group's
transaction fails, each add is committed alone, so one bad add cannot fail the others.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from typing import TYPE_CHECKING, Any

from memstore.errors import LLMError, MemstoreError
from memstore.ids import new_id
from memstore.pipeline.analyze_facts import analyze_facts
from memstore.pipeline.build_rows import build_rows
from memstore.pipeline.commit_rows import commit_rows
from memstore.pipeline.dedupe_facts import dedupe_facts
from memstore.pipeline.embed_facts import embed_facts
from memstore.pipeline.extract_facts import extract_facts
from memstore.pipeline.gather_context import gather_context
from memstore.truth.supersede_by_slot import attach_slots, supersede_by_slot
from memstore.pipeline.types import AddState
from memstore.pipeline.validate_input import validate_input
from memstore.errors import PipelineStepError  # noqa: F401  (defined with every error class)

if TYPE_CHECKING:
    from memstore.runtime import Runtime

PREPARE_STEPS = (validate_input, gather_context, extract_facts, analyze_facts, embed_facts)
WRITE_STEPS = (dedupe_facts, supersede_by_slot, build_rows, attach_slots, commit_rows)   # under the write lock


def _run(step: Any, state: AddState, rt: Runtime) -> AddState:
    try:
        rt.db.checkpoint(f"step:{step.__name__}")
        return step(state, rt)
    except (MemstoreError, KeyboardInterrupt):
        raise
    except Exception as exc:  # turn a bare crash into an error that names the step
        raise PipelineStepError(f"add() failed in step {step.__name__}: {type(exc).__name__}: {exc}",
                                hint="nothing was stored", step=step.__name__) from exc


def run_add(state: AddState, rt: Runtime) -> AddState:
    """Run every step; returns the state with `results` = exactly what was committed."""
    t0 = time.perf_counter()
    state = commit_add(prepare_add(state, rt), rt)
    state.timings["total"] = time.perf_counter() - t0
    return state


# The model steps: run per add by prepare_add, or once for many adds by analyze_and_embed.
MODEL_STEPS = (analyze_facts, embed_facts)


def prepare_add(state: AddState, rt: Runtime, *, models: bool = True) -> AddState:
    """The steps before the write lock (validate … embed): reads only, nothing is stored. A failed
    LLM call is recorded as an `llm_error` extraction run and re-raised. `models=False` stops
    after extraction: spaCy and the embedder then run for many adds at once (analyze_and_embed)."""
    for step in PREPARE_STEPS if models else PREPARE_STEPS[:-len(MODEL_STEPS)]:
        try:
            state = _run(step, state, rt)
        except LLMError as exc:
            _record_failed_run(state, rt, exc)
            raise
    return state


def analyze_and_embed(states: list[AddState], rt: Runtime) -> list[AddState | BaseException]:
    """The model steps for many prepared adds in ONE spaCy pass and one embedding call per kind
    of add (a short text costs spaCy and ONNX far less inside a batch than alone). If the batch
    fails, each add runs alone; returns each add's state or the exception it alone raised."""
    try:
        _merged_models(states, rt)
        return list(states)
    except MemstoreError:
        out: list[AddState | BaseException] = []
        for st in states:
            try:
                _merged_models([st], rt)
                out.append(st)
            except MemstoreError as exc:
                out.append(exc)
        return out


def _merged_models(states: list[AddState], rt: Runtime) -> None:
    t0 = time.perf_counter()
    merged = AddState(scope=states[0].scope, messages=[], metadata={}, infer=True)
    merged.facts = [f for st in states for f in st.facts]
    _run(analyze_facts, merged, rt)
    for infer in (True, False):          # embed_facts words raw turns and facts differently
        part = [f for st in states if st.infer is infer for f in st.facts]
        if part:
            one = AddState(scope=states[0].scope, messages=[], metadata={}, infer=infer)
            one.facts = part
            _run(embed_facts, one, rt)
    shared = time.perf_counter() - t0
    for st in states:
        st.timings["nlp+embed (group)"] = shared


def commit_add(state: AddState, rt: Runtime) -> AddState:
    """The steps under the write lock (dedupe … commit) for one prepared add: ONE transaction."""
    with rt.db.write_lock:
        for step in WRITE_STEPS:
            state = _run(step, state, rt)
    return state


def commit_adds(states: list[AddState], rt: Runtime) -> list[AddState | BaseException]:
    """Commit prepared adds together in ONE transaction (group commit). Each add sees the ones
    before it (dedupe, slot supersession), as if they had been committed one after another.
    Every table's rows wait and are written as one Arrow batch per table; a step that reads the
    store first writes what is pending (see DeferredInserts), so reads see the earlier adds.

    Returns, per add, its committed state or the exception that add alone raised: when the group's
    transaction fails, it is rolled back and every add is committed on its own."""
    if len(states) == 1:
        return [_commit_alone(states[0], rt)]
    from memstore.ingest.deferred import DeferredInserts

    snapshot = [copy.deepcopy(st.facts) for st in states]
    db = rt.db
    with db.write_lock:
        try:
            with db.transaction("group_commit", cache_follows=True):
                writer = DeferredInserts(db, eager=frozenset(), flush_on_read=True)
                grt = dataclasses.replace(rt, db=writer)
                done = []
                for st in states:
                    for step in WRITE_STEPS:
                        st = _run(step, st, grt)
                    done.append(st)
                writer.flush()
            return list(done)
        except MemstoreError:
            pass        # rolled back (the cache was dropped): each add on its own below
        out: list[AddState | BaseException] = []
        for st, facts in zip(states, snapshot):
            st.facts, st.results, st.tables, st.extraction_run_id = facts, [], {}, None
            out.append(_commit_alone(st, rt))
        return out


def _commit_alone(state: AddState, rt: Runtime) -> AddState | BaseException:
    """One add in its own transaction; on failure the state is put back as it was prepared, so a
    retry (e.g. after a DuckDB conflict) dedupes and supersedes again instead of trusting the
    outcomes of the rolled-back attempt."""
    facts = copy.deepcopy(state.facts)
    try:
        return commit_add(state, rt)
    except MemstoreError as exc:
        state.facts, state.results, state.tables, state.extraction_run_id = facts, [], {}, None
        return exc


def _record_failed_run(state: AddState, rt: Runtime, exc: LLMError) -> None:
    """Keep a trace of the failed LLM call (status llm_error); the messages are NOT stored, so a
    retry of the same add() does not duplicate them."""
    sc, cfg = state.scope, rt.config.llm
    try:
        with rt.db.transaction("record_failed_run"):
            rt.db.run("queries/insert_failed_run", {
                "id": new_id(), "scope_key": sc.key, "user_id": sc.user_id, "agent_id": sc.agent_id,
                "run_id": sc.run_id, "extractor": "llm", "model": cfg.model,
                "prompt_version": getattr(rt.extractor, "prompt_version", None),
                "input_message_ids": [m.id for m in state.messages], "error": str(exc)[:2000],
                "latency_ms": None, "created_at": state.now})
    except MemstoreError:  # StoreWriteError, or ReadOnlyError on a read-only store
        pass  # the LLM error is what the caller must see; a failed trace must not hide it
