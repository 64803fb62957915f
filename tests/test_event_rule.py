"""The event-fact rule, as README.md ("Truth over time") states it, on the write path: golden
cases of tests/golden/rules/events.jsonl through `Memory.add` with the offline extractor.

An event that ENDS a slot ("broke up with Tom") is never superseded; an event that SETS a slot's
value ("moved to Seattle") ends the previous holder and holds the slot itself, until the slot's
next statement supersedes it — it stays in the timeline with its interval, visible `as_of` any
moment inside it (the demo's "moved to Seattle last weekend" → "lives in Seattle now")."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memstore import Memory

CASES = [json.loads(line) for line in
         (Path(__file__).parent / "golden" / "rules" / "events.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_event_rule(case, tmp_path):
    with Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        for when, text in case["said"]:
            m.add(text, user_id=case["user"], timestamp=when)
        tl = m.timeline(user_id=case["user"])
        for pattern, status in case["expected"].items():
            rows = [r for r in tl.iter_rows(named=True) if re.search(pattern, r["memory"], re.I)]
            assert rows, f"no memory matches {pattern!r}: {tl['memory'].to_list()}"
            assert {r["status"] for r in rows} == {status}, (pattern, [(r["memory"], r["status"]) for r in rows])
        for when, patterns in (case.get("as_of") or {}).items():
            then = [r["memory"] for r in m.get_all(user_id=case["user"], as_of=when, top_k=100)["results"]]
            for pattern in patterns:
                assert any(re.search(pattern, t, re.I) for t in then), (when, pattern, then)
