"""add(infer=False): each message stored as it is, paying only for what search reads (no spaCy
models run: the light analysis gives its terms and entities)."""
from __future__ import annotations

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


# -- de-duplication keeps every source ------------------------------------------------------------

def test_exact_duplicate_raw_message_keeps_one_memory_and_every_source(memory):
    first = memory.add([{"role": "user", "content": "Deploy on Fridays is banned."}], user_id="team", infer=False,
                       metadata={"channel": "ops", "n": 1})
    mid = first["results"][0]["id"]
    second = memory.add([{"role": "user", "content": "Deploy on Fridays is banned."}], user_id="team", infer=False,
                        metadata={"channel": "eng", "n": 2})
    # mem0's shape, truthful: the existing memory, nothing changed (NONE), this occurrence's source
    [res] = second["results"]
    assert (res["id"], res["event"], res["deduplicated"], res["metadata"]) == (mid, "NONE", True,
                                                                                {"channel": "eng", "n": 2})
    assert second["extraction"]["deduplicated"] == 1
    assert memory.db.scalar("SELECT count(*) FROM memories") == 1
    got = memory.get(mid)
    assert [s["metadata"] for s in got["sources"]] == [{"channel": "ops", "n": 1}, {"channel": "eng", "n": 2}]
    msg_ids = [r[0] for r in memory.db.rows("t", sql="SELECT id FROM messages ORDER BY created_at")]
    assert [s["message_ids"] for s in got["sources"]] == [[msg_ids[0]], [msg_ids[1]]]
    assert res["source_message_ids"] == [msg_ids[1]]
    # a memory added once has no `sources` (its one source is source_message_ids / metadata)
    other = memory.add("only once", user_id="team", infer=False)["results"][0]["id"]
    assert "sources" not in memory.get(other)


def test_duplicate_within_one_raw_add_is_a_second_source(memory):
    out = memory.add([{"role": "user", "content": "same words"}, {"role": "user", "content": "Same words."}],
                     user_id="alice", infer=False, metadata={"k": 1})
    assert [r["event"] for r in out["results"]] == ["ADD", "NONE"]
    assert out["results"][0]["id"] == out["results"][1]["id"]
    assert len(memory.get(out["results"][0]["id"])["sources"]) == 2


def test_repeat_of_a_stored_memory_inside_one_add_points_at_the_stored_memory(memory):
    mid = memory.add("keep this", user_id="u", infer=False)["results"][0]["id"]
    out = memory.add([{"role": "user", "content": "keep this"}, {"role": "user", "content": "Keep this."}],
                     user_id="u", infer=False)
    assert {r["id"] for r in out["results"]} == {mid} and [r["event"] for r in out["results"]] == ["NONE", "NONE"]
    assert len(memory.get(mid)["sources"]) == 3


def test_inferred_duplicate_records_its_source_too(memory):
    first = memory.add("I live in Boston", user_id="alice", metadata={"via": "chat"})["results"][0]["id"]
    again = memory.add("I live in Boston.", user_id="alice", metadata={"via": "email"})
    assert again["results"] == [] and again["extraction"]["deduplicated"] == 1     # mem0's infer answer
    assert [s["metadata"] for s in memory.get(first)["sources"]] == [{"via": "chat"}, {"via": "email"}]


def test_deleting_a_memory_deletes_its_sources(memory):
    mid = memory.add("twice", user_id="u", infer=False)["results"][0]["id"]
    memory.add("twice", user_id="u", infer=False)
    assert memory.db.scalar("SELECT count(*) FROM memory_sources") == 1
    memory.delete(mid)
    assert memory.db.scalar("SELECT count(*) FROM memory_sources") == 0
