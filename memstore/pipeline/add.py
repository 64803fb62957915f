"""The add() pipeline: an ordered tuple of small steps; this module only sequences them.

    prepare:  validate → context → extract (ONE LLM call)  |  analyze (spaCy) → embed (batch)
              `prepare_text`                               |  `prepare_models` (one add or many)
    commit:   [one write unit] dedupe (whole scope) → supersede by slot → build rows → commit rows

Every add in the product goes through these calls — `Memory.add`, the server's group commit,
ingest and the mem0 import:

- `prepare(state, rt) -> PreparedAdd` runs both prepare parts: reads only, nothing is stored, no
  lock is held, and the result is plain data (it pickles: a worker process can prepare it);
- `commit(groups, rt, writer)` writes many prepared adds in ONE write unit of `writer`
  (memstore/store/writer.py; units open at memstore/store/unit.py). Each add sees the ones before it
  as if committed one after another. A group (one add, or one ingested conversation) is atomic: if
  the unit fails, each group is committed alone, so one bad group cannot fail the others.

Callers that batch the model work (the group commit, ingest) call `prepare_text` per add and
`prepare_models` once for many. What differs between callers travels with each add
(`AddState.options`), never in a copied runtime.

>>> [s.__name__ for s in TEXT_STEPS + MODEL_STEPS]
['validate_input', 'gather_context', 'extract_facts', 'analyze_facts', 'embed_facts']
>>> [s.__name__ for s in WRITE_STEPS]
['dedupe_facts', 'supersede_by_slot', 'build_rows', 'commit_rows']
"""
from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memstore.core.errors import (
    LLMError,
    MemstoreError,
    PipelineStepError,
)
from memstore.core.model import AddState, PreparedAdd
from memstore.pipeline.analyze_facts import analyze_facts
from memstore.pipeline.beside import beside
from memstore.pipeline.build_rows import build_rows
from memstore.pipeline.commit_rows import commit_rows
from memstore.pipeline.dedupe_facts import dedupe_facts
from memstore.pipeline.embed_facts import embed_facts
from memstore.pipeline.extract_facts import extract_facts
from memstore.pipeline.gather_context import gather_context
from memstore.pipeline.supersede_by_slot import read_slots, supersede_by_slot
from memstore.pipeline.validate_input import validate_input
from memstore.store.rows import failed_run_params
from memstore.store.unit import write_unit
from memstore.store.writer import BatchedWriter, ImmediateWriter, Writer

if TYPE_CHECKING:
    from memstore.runtime import Runtime

READ_STEPS = (validate_input, gather_context)    # per add, where the store is: the owner process
EXTRACT_STEPS = (extract_facts,)                  # per add: the ONE extractor call (a worker may run it)
TEXT_STEPS = READ_STEPS + EXTRACT_STEPS           # per add: reads and the ONE extractor call
MODEL_STEPS = (analyze_facts, embed_facts)      # per add, or once for many adds (prepare_models)
WRITE_STEPS = (dedupe_facts, supersede_by_slot, build_rows, commit_rows)   # inside the write unit

Timed = Callable[[str], contextlib.AbstractContextManager[Any]]


def _run(step: Any, state: AddState, rt: Runtime, *args: Any) -> AddState:
    try:
        return step(state, rt, *args)
    except (MemstoreError, KeyboardInterrupt):     # already says what failed (a store fault names its point)
        raise
    except Exception as exc:  # turn a bare crash into an error that names the step
        raise PipelineStepError(f"add() failed in step {step.__name__}: {type(exc).__name__}: {exc}",
                                hint="nothing was stored", step=step.__name__) from exc


def run_add(state: AddState, rt: Runtime) -> AddState:
    """Run every step; returns the state with `results` = exactly what was committed."""
    t0 = time.perf_counter()
    state = commit_add(prepare(state, rt), rt)
    state.timings["total"] = time.perf_counter() - t0
    return state


def prepare(state: AddState, rt: Runtime, *, extractor: Any = None, retries: int = 0, backoff_s: float = 1.0,
            record_failure: bool = True) -> PreparedAdd:
    """Every prepare step of one add (`prepare_text`, then `prepare_models`): reads only."""
    state = prepare_text(state, rt, extractor=extractor, retries=retries, backoff_s=backoff_s,
                         record_failure=record_failure)
    out = prepare_models([state], rt)[0]
    if isinstance(out, BaseException):
        if record_failure and isinstance(out, LLMError):     # the embedding endpoint failed
            record_failed_run(state, rt, out)
        raise out
    return out


def prepare_text(state: AddState, rt: Runtime, *, extractor: Any = None, retries: int = 0, backoff_s: float = 1.0,
                 record_failure: bool = True, steps: tuple | None = None) -> AddState:
    """validate → context → extract: reads only, nothing is stored.

    `extractor` replaces the runtime's for this add (ingest's bulk-parsing offline extractor). A
    retryable LLM error is retried `retries` times with exponential backoff; a failed LLM call is
    recorded as an `llm_error` extraction run (unless `record_failure` is False: the caller
    records it) and re-raised. `steps` runs a part: READ_STEPS (the store's reads, in the process
    that owns it) or EXTRACT_STEPS (no store needed: what a worker process runs); None: all of TEXT_STEPS
    (looked up when called, so a test's fault injection on the tuple reaches it)."""
    for step in TEXT_STEPS if steps is None else steps:
        args = (extractor,) if step is extract_facts and extractor is not None else ()
        for attempt in range(retries + 1):
            try:
                state = _run(step, state, rt, *args)
                break
            except LLMError as exc:
                if exc.retryable and attempt < retries:
                    time.sleep(backoff_s * (2 ** attempt) * (0.5 + random.random()))
                    continue
                if record_failure:
                    record_failed_run(state, rt, exc)
                raise
    return state


def prepare_in_pool(state: AddState, rt: Runtime, pool: Any) -> PreparedAdd:
    """`prepare` with the model work in a worker process (memstore/pipeline/workers.py): the
    store's reads here, the extractor, spaCy and the embedder in `pool`; a failed LLM call is
    recorded here (a worker has no store)."""
    state = prepare_text(state, rt, steps=READ_STEPS)
    try:
        return pool.submit(state).result()
    except LLMError as exc:
        record_failed_run(state, rt, exc)
        raise


def prepare_models(states: list[AddState], rt: Runtime, *, timed: Timed | None = None) -> list[PreparedAdd | BaseException]:
    """The model steps for many adds in ONE spaCy pass and one embedding call per kind of add (a
    short text costs spaCy and ONNX far less inside a batch than alone). If the batch fails, each
    add runs alone; returns each add's state or the exception it alone raised. `timed(stage)`
    wraps each model step (ingest's report times "analyze" and "embed")."""
    try:
        _merged_models(states, rt, timed)
        return list(states)
    except MemstoreError:
        out: list[AddState | BaseException] = []
        for st in states:
            try:
                _merged_models([st], rt, timed)
                out.append(st)
            except MemstoreError as exc:
                out.append(exc)
        return out


def _merged_models(states: list[AddState], rt: Runtime, timed: Timed | None) -> None:
    if not states:
        return
    analyze, embed = MODEL_STEPS
    if len(states) == 1:        # one add: its own steps, its own timings ("nlp", "embed")
        st = states[0]
        _models(rt, timed, bool(st.facts), lambda: _run(analyze, st, rt), lambda: _run(embed, st, rt))
        return
    t0 = time.perf_counter()
    parts = []                  # raw turns and facts are analysed and embedded differently
    for infer in (True, False):
        one = AddState(scope=states[0].scope, messages=[], metadata={}, infer=infer)
        one.facts = [f for st in states if st.infer is infer for f in st.facts]
        if one.facts:
            parts.append(one)

    def each(step: Any) -> Callable[[], None]:
        return lambda: [_run(step, one, rt) for one in parts] and None

    _models(rt, timed, bool(parts), each(analyze), each(embed))
    shared = time.perf_counter() - t0
    for st in states:
        st.timings["nlp+embed (group)"] = shared
        if st.facts:
            st.embedded_with = getattr(rt.embedder, "name", None)


def _models(rt: Runtime, timed: Timed | None, facts: bool, analyze: Callable[[], Any],
            embed: Callable[[], Any]) -> None:
    """spaCy's `analyze()` on this thread and `embed()` beside it on a helper thread
    (memstore/pipeline/beside.py): a remote embedder waits on the network and the local ONNX one
    releases the GIL, so spaCy's ~1.5 ms per fact hides behind the embedding call instead of adding
    to it. Neither reads what the other writes (analyze: id, hash, entities, terms, slots; embed:
    the embedding). In turn instead when there are no facts, when the embedder holds the GIL
    (`releases_gil = False`: the hashing one) or when the caller times each stage (`timed`)."""
    if not facts or timed is not None or not getattr(rt.embedder, "releases_gil", True):
        timed = timed or (lambda stage: contextlib.nullcontext())
        with timed("analyze"):
            analyze()
        with timed("embed"):
            embed()
        return
    beside(analyze, embed)


def commit(groups: Sequence[Sequence[AddState]], rt: Runtime, writer: Writer | None = None, *,
           step: str = "commit") -> list[Sequence[AddState] | BaseException]:
    """Commit groups of prepared adds in ONE write unit of `writer` (default: an ImmediateWriter).
    Returns, per group, its committed states or the exception that group alone raised: when the
    unit fails, it is rolled back and every group is committed on its own. A failed attempt puts
    each state back as it was prepared, so a retry dedupes and supersedes again instead of
    trusting the outcomes of the rolled-back attempt."""
    writer = writer or ImmediateWriter(rt.db)
    groups = [list(g) for g in groups]
    if len(groups) > 1:
        saved = [[_saved(st) for st in g] for g in groups]
        try:
            _write_unit(groups, rt, writer, step)
            return list(groups)
        except MemstoreError:
            for g, s in zip(groups, saved):
                _restore(g, s)
    out: list[Sequence[AddState] | BaseException] = []
    for g in groups:
        s = [_saved(st) for st in g]
        try:
            _write_unit([g], rt, writer, step)
            out.append(g)
        except MemstoreError as exc:
            _restore(g, s)
            out.append(exc)
    return out


def _write_unit(groups: list[list[AddState]], rt: Runtime, writer: Writer, step: str) -> None:
    """Run the write steps of every add in ONE unit of `writer`. Each add's `timings["write"]` is
    its share of the unit's wall time from BEGIN to COMMIT (the steps, the flush and the COMMIT)."""
    t_unit = time.perf_counter()
    with writer.unit(step) as w:
        _same_model(groups, rt)
        w.expect_slots(_slot_keys(groups))
        for g in groups:
            for st in g:
                for s in WRITE_STEPS:
                    _run(s, st, rt, w)
    states = [st for g in groups for st in g]
    share = (time.perf_counter() - t_unit) / max(len(states), 1)
    for st in states:
        st.timings["write"] = share


def _same_model(groups: list[list[AddState]], rt: Runtime) -> None:
    """Inside the unit (under the write lock, which a re-embedding's swap holds too): an add whose
    vectors another model made — prepared before the store was re-embedded
    (memstore/governance/reembed.py), committed after — is embedded again with the store's model."""
    model = getattr(rt.embedder, "name", None)
    stale = [st for g in groups for st in g if st.facts and st.embedded_with not in (None, model)]
    for st in stale:
        _run(MODEL_STEPS[1], st, rt)


def _slot_keys(groups: list[list[AddState]]) -> set[tuple[str, str]]:
    """(scope_key, subject|slot) of every fact of the unit that states a slot: the slot histories
    its late facts may ask for, read together by a batched writer."""
    keys = set()
    for g in groups:
        for st in g:
            read_slots(st.facts)
            keys.update((st.scope.key, f"{f.subject}|{f.slot}") for f in st.facts if f.slot)
    return keys


# What the write steps decide on a prepared fact: saved before a unit, put back if it fails.
_DECIDED = ("outcome", "duplicate_of", "subject", "slot", "slot_value", "superseded_by")
_DECIDED_LISTS = ("supersedes", "narrows")


def _saved(state: AddState) -> list:
    return [(f, tuple(getattr(f, k) for k in _DECIDED), tuple(list(getattr(f, k)) for k in _DECIDED_LISTS))
            for f in state.facts]


def _restore(group: list[AddState], saved: list[list]) -> None:
    for st, facts in zip(group, saved):
        for f, values, lists in facts:
            for k, v in zip(_DECIDED, values):
                setattr(f, k, v)
            for k, v in zip(_DECIDED_LISTS, lists):
                setattr(f, k, list(v))
        st.facts, st.results, st.tables = [f for f, _, _ in facts], [], {}


def commit_add(state: PreparedAdd, rt: Runtime) -> AddState:
    """One prepared add in its own transaction (the immediate writer); raises what failed."""
    out = commit([[state]], rt, ImmediateWriter(rt.db))[0]
    if isinstance(out, BaseException):
        raise out
    return state


def commit_adds(states: list[PreparedAdd], rt: Runtime) -> list[AddState | BaseException]:
    """Commit prepared adds together in ONE transaction (the server's group commit: the batched
    writer). Returns, per add, its committed state or the exception that add alone raised."""
    writer = BatchedWriter(rt.db) if len(states) > 1 else ImmediateWriter(rt.db)
    return [out if isinstance(out, BaseException) else out[0]
            for out in commit([[st] for st in states], rt, writer, step="group_commit")]


def record_failed_run(state: AddState, rt: Runtime, exc: LLMError) -> None:
    """Keep a trace of the failed LLM call (status llm_error); the messages are NOT stored, so a
    retry of the same add() does not duplicate them."""
    try:
        with write_unit(rt.db, "record_failed_run"):
            rt.db.run("queries/insert_failed_run", failed_run_params(
                state.scope, model=rt.config.llm.model, prompt_version=getattr(rt.extractor, "prompt_version", None),
                message_ids=[m.id for m in state.messages], error=exc, now=state.now), writes=True)
    except MemstoreError:  # StoreWriteError, or ReadOnlyError on a read-only store
        pass  # the LLM error is what the caller must see; a failed trace must not hide it
