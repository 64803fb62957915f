"""The LLM extraction path through the real `openai` client against ScriptedOpenAIServer:
statuses ok / empty / malformed / llm_error, short-id mapping for links and supersession, retries."""
from __future__ import annotations

import json
import re

import pytest

from memstore import LLMUnavailableError, Memory

TABLES = ("memories", "entities", "entity_postings", "keyword_postings", "memory_links", "history", "messages",
          "extraction_runs")


def snapshot(m: Memory) -> dict[str, list]:
    return {t: sorted(m.db.rows("t", sql=f'SELECT * FROM "{t}"'), key=repr) for t in TABLES}


def runs(m: Memory) -> list[dict]:
    return m.db.dicts("t", sql="SELECT * FROM extraction_runs ORDER BY created_at, id")


def short_id(body: dict, text: str) -> str:
    """The short id (m1, m2, ...) under which the prompt shows a stored memory."""
    found = re.search(rf"^(m\d+): {re.escape(text)}$", body["messages"][-1]["content"], re.M)
    if not found:
        raise LookupError(f"{text!r} is not among the stored memories shown to the model")
    return found.group(1)


def test_ok_facts_are_stored_and_request_is_right(llm_memory, llm_server):
    llm_server.push_chat(json.dumps({"facts": [
        {"text": "Alice is vegetarian", "attributed_to": "Alice"},
        {"text": "Alice lives in Boston"}]}))
    out = llm_memory.add([{"role": "user", "content": "I'm vegetarian and I live in Boston"}], user_id="alice")
    assert sorted(r["memory"] for r in out["results"]) == ["Alice is vegetarian", "Alice lives in Boston"]
    assert out["extraction"]["status"] == "ok"
    assert sorted(r["memory"] for r in llm_memory.get_all(user_id="alice")["results"]) == \
        ["Alice is vegetarian", "Alice lives in Boston"]

    assert llm_server.chat_calls == 1  # ONE extraction call per add
    req = [r for r in llm_server.requests if r["path"].endswith("/chat/completions")][-1]["json"]
    assert req["model"] == "scripted-model"
    assert req["response_format"] == {"type": "json_object"}
    assert "I'm vegetarian and I live in Boston" in req["messages"][-1]["content"]
    assert "Stored memories" not in req["messages"][-1]["content"]  # nothing stored yet

    run = runs(llm_memory)[0]
    assert (run["extractor"], run["model"], run["status"], run["n_facts"], run["n_added"]) == \
        ("llm", "scripted-model", "ok", 2, 2)
    assert run["prompt_version"] and run["latency_ms"] >= 0
    assert llm_memory.db.scalar("SELECT count(*) FROM messages") == 1


def test_empty_answer_is_status_empty(llm_memory, llm_server):
    llm_server.push_chat('{"facts": []}')
    out = llm_memory.add("Hi there, how are you?", user_id="alice")
    assert out["results"] == [] and out["extraction"]["status"] == "empty" and out["extraction"]["error"] is None
    assert runs(llm_memory)[0]["status"] == "empty"
    assert llm_memory.db.scalar("SELECT count(*) FROM messages") == 1
    assert llm_memory.db.scalar("SELECT count(*) FROM memories") == 0


@pytest.mark.parametrize("answer", ["Sure! Alice is vegetarian.", '{"facts": [{"txt": "x"}]}', '{"memories": []}',
                                    '{"facts": "Alice is vegetarian"}', ""])
def test_garbage_answer_is_status_malformed_and_messages_are_saved(llm_memory, llm_server, answer):
    llm_server.push_chat(answer)
    out = llm_memory.add("I'm vegetarian", user_id="alice")
    assert out["results"] == []
    assert out["extraction"]["status"] == "malformed" and out["extraction"]["error"]
    run = runs(llm_memory)[0]
    assert run["status"] == "malformed" and run["error"] == out["extraction"]["error"]
    assert llm_memory.db.scalar("SELECT count(*) FROM memories") == 0
    assert [r[0] for r in llm_memory.db.rows("t", sql="SELECT content FROM messages")] == ["I'm vegetarian"]
    # distinguishable from "nothing to remember"
    llm_server.push_chat('{"facts": []}')
    llm_memory.add("ok thanks", user_id="alice")
    assert [r["status"] for r in runs(llm_memory)] == ["malformed", "empty"]


def test_fenced_json_answer_is_accepted(llm_memory, llm_server):
    llm_server.push_chat('```json\n{"facts": ["Alice likes tea"]}\n```')
    out = llm_memory.add("I like tea", user_id="alice")
    assert [r["memory"] for r in out["results"]] == ["Alice likes tea"]


def test_short_ids_are_mapped_to_real_ids_in_memory_links(llm_memory, llm_server):
    llm_server.push_chat(json.dumps({"facts": ["Alice likes jazz", "Alice plays the saxophone",
                                               "Alice works at Acme"]}))
    first = {r["memory"]: r["id"] for r in llm_memory.add("I like jazz, I play sax, I work at Acme",
                                                          user_id="alice")["results"]}
    llm_server.push_chat('{"facts": ["Bob likes jazz"]}')
    llm_memory.add("I like jazz too", user_id="bob")  # another scope: never shown to alice's extractor

    seen = {}

    def answer(body):
        prompt = body["messages"][-1]["content"]
        seen["prompt"] = prompt
        return json.dumps({"facts": [{"text": "Alice goes to a jazz club every Friday",
                                      "linked_memory_ids": [short_id(body, "Alice likes jazz"),
                                                            short_id(body, "Alice plays the saxophone"),
                                                            "m99", "not-an-id"]}]})
    llm_server.chat_responder = answer
    out = llm_memory.add("I go to a jazz club every Friday", user_id="alice")
    new_id = out["results"][0]["id"]
    assert "Bob likes jazz" not in seen["prompt"]
    assert "I like jazz, I play sax, I work at Acme" in seen["prompt"]  # recent messages as context
    links = llm_memory.db.rows("t", sql="SELECT src_id, dst_id, kind, user_id FROM memory_links ORDER BY dst_id")
    assert sorted(links) == sorted([(new_id, first["Alice likes jazz"], "related", "alice"),
                                    (new_id, first["Alice plays the saxophone"], "related", "alice")])
    assert runs(llm_memory)[-1]["n_linked"] == 2


def test_supersedes_invalidates_old_memory(llm_memory, llm_server):
    llm_server.push_chat('{"facts": ["Alice lives in Boston", "Alice likes jazz"]}')
    first = {r["memory"]: r["id"] for r in llm_memory.add("I live in Boston and like jazz",
                                                          user_id="alice")["results"]}
    boston = first["Alice lives in Boston"]
    llm_server.chat_responder = lambda body: json.dumps({"facts": [
        {"text": "Alice lives in Seattle", "supersedes": [short_id(body, "Alice lives in Boston")]}]})
    out = llm_memory.add("I moved to Seattle last month", user_id="alice")
    seattle = next(r["id"] for r in out["results"] if r["event"] == "ADD")
    assert {"id": boston, "memory": "Alice lives in Boston", "event": "SUPERSEDE", "superseded_by": seattle} \
        in out["results"]

    old = llm_memory.get(boston)
    assert old["invalidated_at"] is not None and old["superseded_by"] == seattle and old["status"] == "superseded"
    assert sorted(r["memory"] for r in llm_memory.get_all(user_id="alice")["results"]) == \
        ["Alice likes jazz", "Alice lives in Seattle"]
    assert boston in {r["id"] for r in llm_memory.get_all(user_id="alice", include_superseded=True)["results"]}
    hist = llm_memory.history(boston)
    assert [h["event"] for h in hist] == ["ADD", "SUPERSEDE"]
    assert (hist[1]["old_memory"], hist[1]["new_memory"]) == ("Alice lives in Boston", "Alice lives in Seattle")
    assert llm_memory.db.rows("t", sql="SELECT src_id, dst_id, kind FROM memory_links") == \
        [(seattle, boston, "supersedes")]

    # a superseded memory is no longer shown to the model
    llm_server.chat_responder = lambda body: json.dumps(
        {"facts": [{"text": "Alice is back in Boston", "supersedes": [short_id(body, "Alice lives in Boston")]}]})
    with pytest.raises(LLMUnavailableError, match="not among the stored memories"):
        llm_memory.add("visiting Boston", user_id="alice")


@pytest.mark.parametrize("failure", ["500", "disconnect", "429"])
def test_transport_errors_raise_retryable_error_and_store_nothing(llm_memory, llm_server, failure):
    llm_server.push_chat('{"facts": ["Alice likes tea"]}')
    llm_memory.add("I like tea", user_id="alice")
    before = snapshot(llm_memory)

    if failure == "500":
        llm_server.push_error(500, "upstream exploded")
    elif failure == "429":
        llm_server.push_error(429, "slow down", retry_after=0.01)
    else:
        llm_server.push_disconnect()
    with pytest.raises(LLMUnavailableError) as err:
        llm_memory.add("I moved to Seattle", user_id="alice")
    assert err.value.retryable is True
    assert "nothing was stored" in str(err.value)

    after = snapshot(llm_memory)
    failed = [r for r in after["extraction_runs"] if r not in before["extraction_runs"]]
    assert len(failed) == 1
    assert {k: v for k, v in before.items() if k != "extraction_runs"} == \
        {k: v for k, v in after.items() if k != "extraction_runs"}
    run = runs(llm_memory)[-1]
    assert run["status"] == "llm_error" and run["extractor"] == "llm" and run["error"]
    assert run["n_added"] == 0 and len(run["input_message_ids"]) == 1
    assert llm_memory.db.scalar("SELECT count(*) FROM messages WHERE content = 'I moved to Seattle'") == 0

    # retrying the same call succeeds and stores the message once
    llm_server.push_chat('{"facts": ["Alice lives in Seattle"]}')
    out = llm_memory.add("I moved to Seattle", user_id="alice")
    assert [r["memory"] for r in out["results"]] == ["Alice lives in Seattle"]
    assert llm_memory.db.scalar("SELECT count(*) FROM messages WHERE content = 'I moved to Seattle'") == 1
    assert [r["status"] for r in runs(llm_memory)] == ["ok", "llm_error", "ok"]


def test_client_retries_are_used_before_giving_up(store_path, llm_server):
    cfg = {"llm": {"provider": "openai", "base_url": llm_server.base_url, "api_key": "t", "model": "scripted-model",
                   "max_retries": 2, "timeout": 5}}
    with Memory(store_path, config=cfg) as m:
        llm_server.push_error(503, retry_after=0.01)
        llm_server.push_error(503, retry_after=0.01)
        llm_server.push_chat('{"facts": ["Alice likes tea"]}')
        out = m.add("I like tea", user_id="alice")
        assert [r["memory"] for r in out["results"]] == ["Alice likes tea"]
        assert llm_server.chat_calls == 3


def test_non_retryable_refusal_is_typed(llm_memory, llm_server):
    llm_server.push_error(401, "bad key")
    with pytest.raises(Exception) as err:
        llm_memory.add("I like tea", user_id="alice")
    assert getattr(err.value, "retryable", None) is False
    assert "llm.api_key" in str(err.value)
    assert llm_memory.db.scalar("SELECT count(*) FROM memories") == 0


def test_near_duplicate_is_caught_by_vector_similarity_within_the_scope_only(llm_memory, llm_server):
    llm_server.push_chat('{"facts": ["Alice is vegetarian", "Alice likes jazz"]}')
    first = {r["memory"]: r["id"] for r in llm_memory.add("I'm vegetarian and like jazz", user_id="alice")["results"]}
    # "a vegetarian" hashes differently but embeds at cosine ~0.99 (>= dedupe_similarity 0.97)
    llm_server.push_chat('{"facts": ["Alice is a vegetarian", "Alice likes hiking"]}')
    out = llm_memory.add("As I said, I'm a vegetarian. I like hiking too", user_id="alice")
    assert [r["memory"] for r in out["results"]] == ["Alice likes hiking"]
    assert out["extraction"]["deduplicated"] == 1
    facts = json.loads(runs(llm_memory)[-1]["facts"])
    assert [(f["text"], f["outcome"]) for f in facts] == [("Alice is a vegetarian", "duplicate"),
                                                          ("Alice likes hiking", "added")]
    assert llm_memory.get(first["Alice is vegetarian"])["memory"] == "Alice is vegetarian"
    # the same near-duplicate for another user is stored: de-duplication never crosses scopes
    llm_server.push_chat('{"facts": ["Alice is a vegetarian"]}')
    assert len(llm_memory.add("Alice is a vegetarian", user_id="bob")["results"]) == 1
