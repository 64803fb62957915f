"""Steps 6b and 7b: truth maintenance on the write path (under the write lock).

`supersede_by_slot` (before build_rows) reads which subject + slot each new fact states
("Alice moved to Seattle" → alice / lives_in) and, when slot supersession is on for this extractor,
makes the newest fact of a slot supersede the current ones: commit_rows then closes their validity,
writes the `supersedes` link and the SUPERSEDE history row in the add's own transaction.
A fact older than the current one on its slot (a late, out-of-order input) is stored already
superseded by the next stored fact, and cuts short the superseded fact it falls inside. A state
that fulfils a plan ends it: "Alice lives in Seattle" supersedes "Alice is moving to Seattle". Facts stated as additions ("also works at ...") replace nothing. A fact that ends a slot
("Alice broke up with Tom", value None) supersedes its holders but is never superseded itself: it stays true.

The slot columns and a late fact's `supersedes` link and SUPERSEDE event are built with the
add's other rows (memstore/store/rows.py); reads go through the writer, so they see the earlier
adds of the same unit.

Config `slot_supersession`: "heuristic" (default: only facts of the offline extractor or
infer=False; the LLM names what it supersedes itself), "always" (also on top of the LLM), "off".
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memstore.core.model import AddState, Fact
from memstore.core.rules.slots import detect_slot, fulfilled_plans
from memstore.core.rules.validity import fact_valid_from

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.writer import Writer


def _active(state: AddState, rt: Runtime) -> bool:
    mode = state.options.slot_supersession or rt.config.slot_supersession
    if mode == "off":
        return False
    extractor = state.extraction.extractor if state.extraction else "none"
    return mode == "always" or extractor in ("heuristic", "none")


def _when(f: Fact, state: AddState) -> Any:
    return fact_valid_from(f, state)


def read_slots(facts: list[Fact]) -> None:
    """The subject + slot each fact states ("Alice moved to Seattle" → alice / lives_in / seattle):
    a pure reading of its text, done with the other analysis in prepare (analyze_facts), so the
    write itself only decides."""
    for f in facts:
        if f.slot_checked:
            continue
        m = detect_slot(f.text, speaker=f.attributed_to)
        if m is not None:
            f.subject, f.slot, f.slot_value, f.slot_additive = m.subject, m.slot, m.value, m.additive
        f.slot_checked = True


def supersede_by_slot(state: AddState, rt: Runtime, w: Writer) -> AddState:
    t0 = time.perf_counter()
    read_slots(state.facts)          # already read in prepare unless the facts came another way
    additive = {id(f) for f in state.facts if f.slot_additive}
    added = [f for f in state.facts if f.outcome == "added" and f.slot]
    if added and _active(state, rt):
        fulfils = {id(f): [f"{f.subject}|{p}" for p in fulfilled_plans(f.slot, f.slot_value)]
                   for f in added if id(f) not in additive}
        keys = sorted({f"{f.subject}|{f.slot}" for f in added} | {k for ks in fulfils.values() for k in ks})
        holders: dict[str, list[tuple[str, Any]]] = {k: [] for k in keys}
        for mid, key, valid_from in w.slot_holders(state.scope.key, keys, state.now):
            holders[key].append((mid, valid_from))
        order = {id(f): n for n, f in enumerate(state.facts)}
        for f in sorted(added, key=lambda f: (_when(f, state), order[id(f)])):
            key, when = f"{f.subject}|{f.slot}", _when(f, state)
            newer = [h for h in holders[key] if h[1] is not None and h[1] > when]
            if newer:       # a stored fact on this slot is newer: this one was already replaced
                _place_late_fact(f, key, when, newer, id(f) in additive, state, w)
                continue
            if id(f) in additive:
                holders[key].append((f.id, when))
                continue
            f.supersedes = list(dict.fromkeys(f.supersedes + [h[0] for h in holders[key]]))
            # a fact that ends the slot ("broke up with Tom") stays true: it holds nothing to replace
            holders[key] = [(f.id, when)] if f.slot_value is not None else []
            for plan in fulfils.get(id(f), []):     # "lives in Seattle" ends the plan "move to Seattle"
                done = [h for h in holders[plan] if h[1] is None or h[1] <= when]
                f.supersedes = list(dict.fromkeys(f.supersedes + [h[0] for h in done]))
                holders[plan] = [h for h in holders[plan] if h not in done]
    state.timings["supersede"] = time.perf_counter() - t0
    return state


def _place_late_fact(f: Fact, key: str, when: Any, newer: list[tuple[str, Any]], additive: bool,
                     state: AddState, w: Writer) -> None:
    """A fact older than the slot's current holder: it ends where the next stored fact on the slot
    begins (current or already superseded), and it cuts short any superseded fact whose interval
    it falls in, so `as_of` any day sees one value. Austin (2022) → Seattle (2023-06), then Boston
    (2023-01) added late: Austin ends 2023-01, Boston runs 2023-01 → 2023-06."""
    stored = w.slot_history(state.scope.key, key, state.now)
    later = [(mid, vf) for mid, vf, _ in stored if vf is not None and vf > when]
    f.superseded_by = min(later or newer, key=lambda h: h[1])
    if not additive:
        f.narrows = [mid for mid, vf, until in stored
                     if until is not None and vf is not None and vf <= when < until]
