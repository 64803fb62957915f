"""add(infer=False): each message stored as it is, paying only for what search reads (no spaCy
models run: the light analysis gives its terms and entities)."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.providers.light_analysis import light_analyze
from memstore.providers.nlp import SpacyNLP


class _NoModels:
    """Stands in for the spaCy pipeline's model pass: a raw add must never call it."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *a, **k):
        self.calls += 1
        raise AssertionError("spaCy's models ran on a raw turn")


def test_raw_add_runs_no_spacy_model_and_search_still_finds_it(memory):
    nlp = memory._rt.nlp
    guard = _NoModels()
    nlp.analyze, nlp.pipe = guard, guard        # the instance's, for this Memory only
    out = memory.add([{"role": "user", "content": "We deployed the Kubernetes cluster in Frankfurt. "
                                                  "The nodes were running out of memory."},
                      {"role": "assistant", "content": "I recommend raising the pods' memory limits."}],
                     user_id="ops", infer=False)
    assert [r["event"] for r in out["results"]] == ["ADD", "ADD"] and guard.calls == 0
    # the terms are lemmas search looks for ("nodes" -> node, "running" -> run) and names are entities
    rows = memory.db.rows("t", sql="SELECT DISTINCT term FROM keyword_postings")
    terms = {r[0] for r in rows}
    assert {"kubernetes", "frankfurt", "node", "run", "memory", "limit", "pod"} <= terms
    assert not {"the", "we", "were", "i"} & terms
    ents = {r[0] for r in memory.db.rows("t", sql="SELECT norm FROM entities")}
    assert {"kubernetes", "frankfurt"} <= ents
    del nlp.analyze, nlp.pipe                   # search analyses its query with the real pipeline
    hits = memory.search("which node ran out of memory", user_id="ops", top_k=1)["results"]
    assert hits[0]["memory"].startswith("We deployed the Kubernetes cluster")


def test_facts_still_get_the_full_analysis(memory):
    nlp = memory._rt.nlp
    calls = []
    real = nlp.analyze
    nlp.analyze = lambda texts, **k: calls.append(list(texts)) or real(texts, **k)
    memory.add("I moved to Lisbon last May", user_id="ann")
    memory.add("raw words here", user_id="ann", infer=False)
    assert calls == [["Ann moved to Lisbon last May"]]


def test_light_analysis_agrees_with_spacy_on_lemmas():
    nlp = SpacyNLP()
    text = "The kids were hiking near Mount Rainier; Tom ran ahead and tracked the trails."
    light = light_analyze(nlp, [text])[0]
    full = nlp.analyze([text])[0]
    shared = set(light.terms) & set(full.terms)
    assert {"kid", "hike", "run", "track", "trail", "rainier", "tom"} <= shared
    assert len(shared) / len(set(full.terms) | set(light.terms)) >= 0.8
    assert {"mount rainier", "tom"} <= {e.norm for e in light.entities}


def test_light_analysis_of_code_and_contractions():
    a = light_analyze(SpacyNLP(), ["I don't know why require('axios') fails: it's in package.json"])[0]
    assert {"axios", "require", "package", "json", "fail"} <= set(a.terms)
    assert not {"don", "n't", "t", "it"} & set(a.terms)
