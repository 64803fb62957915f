"""A front's model work in batches (memstore/server/front_models.py, workers.prepare_batch): adds
prepared together, their sentences parsed in one spaCy pass, come out as each add prepared alone.
(Served end to end, against `--fronts 0`: tests/test_fronts.py, tests/test_server_load.py.)"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from memstore.api.stages import AddStages
from memstore.core.config import MemoryConfig
from memstore.core.identity import Scope
from memstore.core.model import AddState, Message
from memstore.pipeline.add import prepare
from memstore.pipeline.workers import BatchDocs, model_runtime, prepare_batch
from memstore.server.front_models import FrontModels

TURNS = [
    ("ana", "I live in Lisbon and I work at Acme as a nurse", True),
    ("ana", "My sister Maria is vegetarian. She lives in Oslo", True),
    ("bo", "I'm allergic to peanuts; I play chess on Sundays", True),
    ("bo", "Thanks! The kids loved the beach at Cape Cod.", True),
    ("ana", "I moved to Porto last month for my job at Globex", True),
    ("bo", "raw note kept as it is", False),
    ("cy", "Should I move? What do you think?", True),
    ("cy", "We moved to Kyoto last month and I drive a red Fiat", True),
]


@pytest.fixture(scope="module")
def rt():
    return model_runtime(MemoryConfig.from_dict({"embedder": {"provider": "hashing"}}))


def _state(user: str, text: str, infer: bool) -> AddState:
    return AddState(scope=Scope(user_id=user), messages=[Message("user", text, id=f"m-{hash(text)}")],
                    metadata={}, infer=infer)


def _facts(st: AddState) -> list:
    return [(f.text, f.kind, f.hash, sorted((e.norm, e.label) for e in f.entities), sorted(f.terms.items()),
             f.slot, f.slot_value) for f in st.facts]


def test_a_batch_prepares_what_each_add_prepares_alone(rt):
    alone = [prepare(_state(*t), rt, record_failure=False) for t in TURNS]
    docs = BatchDocs(rt)
    primed = []
    prime = docs.cache.prime
    docs.cache.prime = lambda texts: primed.append(list(texts)) or prime(primed[-1])
    together = prepare_batch([_state(*t) for t in TURNS], rt, docs=docs)
    assert len(primed) == 1 and len(primed[0]) >= 8       # every add's sentences in one spaCy pass
    assert sum(len(st.facts) for st in alone) >= 10
    for a, b in zip(alone, together):
        assert _facts(a) == _facts(b)
        assert all(np.array_equal(x.embedding, y.embedding) for x, y in zip(a.facts, b.facts))
    assert not docs.cache._docs                          # nothing kept for the next batch


def test_concurrent_adds_in_a_front_are_prepared_in_batches_with_equal_results(rt):
    alone = [_facts(prepare(_state(*t), rt, record_failure=False)) for t in TURNS]
    models = FrontModels(AddStages(rt))
    out: list = [None] * len(TURNS)
    start = threading.Barrier(len(TURNS))

    def one(i: int) -> None:
        start.wait()
        out[i] = _facts(models.prepare(_state(*TURNS[i])))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(TURNS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == alone
    assert models.adds == len(TURNS) and models.batches < len(TURNS)


def test_a_batch_waits_for_the_adds_on_their_way_and_not_for_one_that_failed(rt):
    import time

    models = FrontModels(AddStages(rt), linger_s=5.0)
    first, second = models.coming(), models.coming()
    done: list = []
    a = threading.Thread(target=lambda: done.append(models.prepare(_state(*TURNS[0]), first)))
    a.start()
    time.sleep(0.2)                             # the batch holds: `second` is on its way
    assert not done and models.batches == 0
    assert _facts(models.prepare(_state(*TURNS[1]), second)) == _facts(prepare(_state(*TURNS[1]), rt,
                                                                                record_failure=False))
    a.join()
    assert models.batches == 1 and models.adds == 2
    failed = models.coming()                    # e.g. refused by the owner before its prepare
    t0 = time.monotonic()
    b = threading.Thread(target=lambda: done.append(models.prepare(_state(*TURNS[2]))))
    b.start()
    time.sleep(0.2)
    failed.done()
    b.join()
    assert len(done) == 2 and time.monotonic() - t0 < 2.0     # not the 5 s linger
