"""Adds prepared in worker processes (`Memory.start_workers`, `memstore serve --workers N`) store
exactly what adds prepared in-process store. (The load tests with workers, and SIGKILL of a worker
mid-load, are in tests/test_server_load.py.)"""
from __future__ import annotations

import numpy as np

from memstore import Memory

CONFIG = {"embedder": {"provider": "hashing"}}
TURNS = [
    ("ana", "I live in Lisbon and I work at Acme as a nurse"),
    ("ana", "My sister Maria is vegetarian"),
    ("bo", "I'm allergic to peanuts. I play chess on Sundays"),
    ("ana", "I moved to Porto last month"),
    ("bo", "I no longer play chess; I took up go"),
    ("ana", "My favourite band is Radiohead and I drive a red Fiat"),
]


def _store(path, workers):
    m = Memory(str(path), config=CONFIG, embedded=True)
    if workers:
        assert len(m.start_workers(workers)) == workers
    outs = [m.add(text, user_id=user, timestamp=f"2024-01-0{i + 1}T10:00") for i, (user, text) in enumerate(TURNS)]
    outs.append(m.add("raw note kept as it is", user_id="bo", infer=False))
    rows = m.sql("select m.user_id, m.memory, m.slot, m.slot_value, s.memory as later, m.embedding from memories m "
                 "left join memories s on s.id = m.superseded_by order by all").rows()
    ents = m.sql("select name, norm, label from entities order by all").rows()
    m.close()
    return outs, rows, ents


def test_results_equal_with_and_without_workers(tmp_path):
    outs0, rows0, ents0 = _store(tmp_path / "w0.duckdb", 0)
    outs2, rows2, ents2 = _store(tmp_path / "w2.duckdb", 2)
    assert [[(r["memory"], r["event"]) for r in o["results"]] for o in outs0] == \
           [[(r["memory"], r["event"]) for r in o["results"]] for o in outs2]
    assert len(rows0) >= 8 and any(r[2] for r in rows0)       # facts with slots, some superseded
    assert [r[:5] for r in rows0] == [r[:5] for r in rows2]
    assert all(np.allclose(a[5], b[5]) for a, b in zip(rows0, rows2))
    assert ents0 == ents2 and ents0


def _ingested(path, workers):
    m = Memory(str(path), config=CONFIG, embedded=True)
    report = m.ingest("data/demo/jsonl/erin/messages.jsonl", user_id="erin", workers=workers, progress=False)
    rows = m.sql("select memory, slot, slot_value, embedding from memories order by all").rows()
    m.close()
    return report, rows


def test_ingest_with_workers_stores_what_ingest_without_stores(tmp_path):
    r0, rows0 = _ingested(tmp_path / "i0.duckdb", 0)
    r2, rows2 = _ingested(tmp_path / "i2.duckdb", 2)
    assert r0.memories == r2.memories and r0.memories["added"] > 5
    assert "analyze+embed (workers)" in r2.stages_s and "analyze+embed (workers)" not in r0.stages_s
    assert [r[:3] for r in rows0] == [r[:3] for r in rows2]
    assert all(np.allclose(a[3], b[3]) for a, b in zip(rows0, rows2))
