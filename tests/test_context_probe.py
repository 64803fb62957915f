"""One context probe: the LLM sees the same related memories whether a conversation arrives by
add() or by ingest (core/rules/context_probe.py), with the real `openai` client against a scripted
OpenAI-compatible server. (tests/test_add_vs_ingest.py compares the stored rows with the offline
extractor, which reads no context, so it cannot see this.)"""
from __future__ import annotations

import json
import re

from memstore import Memory
from memstore.core.model import Message
from memstore.core.rules.context_probe import PROBE_CHARS, probe_text
from memstore.testing.openai_server import ScriptedOpenAIServer

# stored before the conversation: some about what the user will say, some about what the
# assistant will talk about at length; the LLM is shown the 3 nearest
SEEDED = ["Kim likes jazz", "Kim goes hiking near Sintra", "Kim plays jazz piano on weekends",
          "Kim studies chess openings", "Kim reads about chess openings and endgames",
          "Kim bakes bread at a bakery", "Kim watches chess tournaments"]
TURNS = ["Can you plan my weekend? I like hiking near Sintra and jazz.",
         "Chess openings, chess endgames, chess tournaments and bakeries: " * 12]
MEMORY_LINE = re.compile(r"^(m\d+): (.*)$", re.MULTILINE)


def _responder(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    new = prompt.split("New messages:")[1]
    facts = [{"text": f"Kim {verb} {what}", "attributed_to": "Kim"}
             for verb, what in re.findall(r"I (live in|like|work at) ([\w ]+?)(?:[.,]| and|$)", new)]
    facts = [{**f, "text": f["text"].replace("live in", "lives in").replace("like ", "likes ")
              .replace("work at", "works at")} for f in facts]
    return json.dumps({"facts": facts})


def _contexts(server: ScriptedOpenAIServer) -> list[list[str]]:
    """Per LLM call, the related memories it was shown (texts, in order)."""
    prompts = [r["json"]["messages"][-1]["content"] for r in server.requests if r["path"].endswith("/chat/completions")]
    return [[text for _, text in MEMORY_LINE.findall(p.split("New messages:")[0])] for p in prompts]


def _memory(path: str, server: ScriptedOpenAIServer) -> Memory:
    return Memory(path, config={"embedder": {"provider": "hashing"}, "context_memories": 3,
                                "llm": {"provider": "openai", "base_url": server.base_url, "api_key": "test",
                                        "model": "scripted-model", "max_retries": 0, "timeout": 10}})


def test_add_and_ingest_show_the_llm_the_same_related_memories(tmp_path):
    msgs = [{"role": "user", "content": TURNS[0], "timestamp": "2024-03-01T10:00:00Z"},
            {"role": "assistant", "content": TURNS[1], "timestamp": "2024-03-01T10:01:00Z"}]
    contexts = []
    for door in ("add", "ingest"):
        with ScriptedOpenAIServer(chat_responder=_responder) as srv, \
                _memory(str(tmp_path / f"{door}.duckdb"), srv) as m:
            for text in SEEDED:
                m.add(text, user_id="kim", infer=False)
            if door == "add":
                m.add([{"role": x["role"], "content": x["content"]} for x in msgs], user_id="kim",
                      timestamp=msgs[0]["timestamp"])
            else:
                path = tmp_path / "chat.jsonl"
                path.write_text("\n".join(json.dumps({**x, "conversation": "c1"}) for x in msgs))
                assert m.ingest(path, user_id="kim", batch_size=2, concurrency=1).status == "done"
            contexts.append(_contexts(srv))
    by_add, by_ingest = contexts
    assert len(by_add) == len(by_ingest) == 1
    assert len(by_add[0]) == 3
    # the user's own words choose: not the assistant's long answer about chess and bakeries
    assert "Kim goes hiking near Sintra" in by_add[0] and "Kim likes jazz" in by_add[0]
    assert by_add == by_ingest


def test_the_probe_is_what_the_user_says_about_themselves():
    msgs = [Message("user", "Can you plan the week? I moved to Porto."), Message("assistant", "Sure. " * 400)]
    assert probe_text(msgs) == "I moved to Porto."
    assert len(probe_text([Message("user", "x " * 2000)])) == PROBE_CHARS
    assert probe_text([Message("assistant", "only the assistant spoke")]) == "only the assistant spoke"
