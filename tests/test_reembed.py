"""`memstore reembed`: a store built with the hashing embedder, with supersessions and the HNSW
index, re-embedded with the local MiniLM answers searches exactly like a store built with MiniLM
from the start; a job whose process died midway (a real process, killed without closing the store)
is completed by the next run, memories added and updated in between included; searches running
during the job each answer with one model: all old or all new, never a mix."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings

import pytest

from memstore import Memory

HASHING = {"embedder": {"provider": "hashing"}}
LOCAL = {"embedder": {"provider": "local"}}
FILES = {"alice": "data/demo/chatgpt/alice/conversations.json", "carol": "data/demo/locomo/carol_dave.json"}
QUERIES = ["where does alice live", "what pets", "which job", "who did carol meet", "trip"]


def _build(path: str, config: dict) -> None:
    with Memory(path, config=config) as m:
        for user, f in FILES.items():
            m.ingest(f, user_id=user, progress=False)
        m.search_all("cat", top_k=3)                                 # builds the analyst HNSW index


def _answers(m) -> list:
    return [[(r["memory"], round(r["score"], 5), r.get("status")) for r in m.search(q, user_id=u)["results"]]
            for q in QUERIES for u in FILES]


def _all(m) -> list:
    return [(r["memory"], round(r["score"], 5)) for r in m.search_all("cat", top_k=5)["results"]]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("re")
    _build(str(d / "local.duckdb"), LOCAL)
    with Memory(str(d / "local.duckdb"), config=LOCAL) as m:
        expected = _answers(m), _all(m)
        assert m.sql("SELECT count(*) AS n FROM memories WHERE superseded_by IS NOT NULL")["n"][0] > 0
    return d, expected


def test_hashing_to_local_equals_a_store_built_with_local(built, tmp_path):
    d, (answers, analyst) = built
    path = str(tmp_path / "h.duckdb")
    _build(path, HASHING)
    with Memory(path, config=HASHING) as m:
        before = _answers(m)
        out = m.reembed("local", batch=16)
        assert out["status"] == "done" and out["hnsw_rebuilt"] and out["memories"] == out["embedded"] > 0
        assert _answers(m) == answers != before                        # this process now searches with MiniLM
        assert _all(m) == analyst
        assert m.sql("SELECT value FROM store_meta WHERE key = 'embedder'")["value"][0] == "all-MiniLM-L6-v2-int8"
        assert m.sql("SELECT count(*) AS n FROM reembed_vectors")["n"][0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)                 # the store now says MiniLM
        with Memory(path, config=LOCAL) as m:
            assert _answers(m) == answers


def test_a_job_killed_midway_finishes_on_the_next_run(built, tmp_path):
    d, _ = built
    path, ref = str(tmp_path / "h.duckdb"), str(tmp_path / "l.duckdb")
    _build(path, HASHING)
    _build(ref, LOCAL)
    crash = ("import os, sys; from memstore import Memory; from memstore.governance.reembed import reembed_store; "
             "from memstore.providers.factory import build_embedder; from memstore.core.config import EmbedderConfig; "
             f"m = Memory({path!r}, config={HASHING!r}); "
             "out = reembed_store(m._rt, build_embedder(EmbedderConfig(provider='local')), batch=8, stop_after=2); "
             "print(out['embedded'], flush=True); os._exit(9)")              # dies holding the store open
    run = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, timeout=300)
    assert run.returncode == 9 and run.stdout.strip() == "16", run.stderr
    for p, cfg in ((path, HASHING), (ref, LOCAL)):       # the store changes between the crash and the re-run
        with Memory(p, config=cfg) as m:
            m.add("I moved to Berlin in December.", user_id="alice", timestamp="2025-01-05")
            first = sorted(r["memory"] for r in m.get_all(user_id="carol")["results"])[0]
            mid = next(r["id"] for r in m.get_all(user_id="carol")["results"] if r["memory"] == first)
            m.update(mid, "Carol keeps bees on the roof")
    again = subprocess.run([sys.executable, "-m", "memstore.cli", "reembed", "--store", path, "--embedder", "local",
                            "--json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["resumed_from"] == 16 and out["status"] == "done"
    with Memory(path, config=LOCAL) as m, Memory(ref, config=LOCAL) as r:
        assert _answers(m) == _answers(r) and _all(m) == _all(r)
        assert m.sql("SELECT status FROM reembed_jobs").rows() == [("done",)]


def test_searches_during_the_job_answer_with_one_model(tmp_path):
    path = str(tmp_path / "h.duckdb")
    _build(path, HASHING)
    with Memory(path, config=HASHING) as m:
        old = _answers(m)
        seen, stop = [], threading.Event()

        def search() -> None:
            while not stop.is_set():
                seen.append(_answers(m))

        t = threading.Thread(target=search)
        t.start()
        try:
            m.reembed("local", batch=4)
        finally:
            stop.set()
            t.join()
        new = _answers(m)
        seen.append(_answers(m))
    assert len(seen) > 2 and sum(o != n for o, n in zip(old, new)) >= len(old) // 2
    for answers in seen:                  # each search: the old model's answer or the new one's
        assert all(a in (o, n) for a, o, n in zip(answers, old, new))


def test_an_add_prepared_before_the_swap_and_committed_after_takes_the_new_model(tmp_path):
    """The window between an add's embedding and its commit: the commit (under the write lock the
    swap holds too) sees the vectors were made by the old model and embeds them again."""
    import numpy as np

    from memstore.providers.embed_local import LocalEmbedder

    with Memory(str(tmp_path / "w.duckdb"), config=HASHING) as m:
        m.add("I keep bees on the roof", user_id="ana", infer=False)
        prepared = m.prepare_add("I play the cello on Sundays", user_id="ana", infer=False)
        assert prepared.embedded_with == "hashing-384"
        m.reembed("local")
        m.commit_prepared([prepared])
        rows = m.sql("SELECT memory, embedding FROM memories WHERE user_id = 'ana' ORDER BY memory").rows()
    want = LocalEmbedder().embed([f"{p}" for p in ("ana: I keep bees on the roof", "ana: I play the cello on Sundays")])
    for (text, vec), expected in zip(rows, want):
        assert np.allclose(np.asarray(vec, dtype=np.float32), expected, atol=1e-5), text
