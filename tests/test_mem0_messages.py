"""Messages in every shape mem0 takes (OpenAI chat format): tool-call turns skipped, tool results as
context, content parts joined, images described by a vision LLM (the scripted OpenAI-compatible
server) or noted as "[image]"; a malformed message is an InputError naming it."""
from __future__ import annotations

import json

import pytest

from memstore import Memory
from memstore.core.errors import InputError, LLMError

TRANSCRIPT = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": [{"type": "text", "text": "I moved to Lisbon last month."},
                                 {"type": "text", "text": "I'm vegetarian."}]},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "find_restaurants", "arguments": '{"city": "Lisbon"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "I am open late: Ao 26 Vegan Food Project"},
    {"role": "assistant", "content": "Ao 26 is a vegan place open late."},
]


def _memory(tmp_path, **llm):
    cfg = {"embedder": {"provider": "hashing"}}
    if llm:
        cfg["llm"] = {"provider": "openai", "api_key": "test", "model": "scripted-model", "max_retries": 0,
                      "timeout": 5, **llm}
    return Memory(str(tmp_path / "m.duckdb"), config=cfg)


def _chat_bodies(srv):
    return [r["json"] for r in srv.requests if r["path"].endswith("/chat/completions")]


def test_an_agent_transcript_is_stored_not_refused(tmp_path):
    with _memory(tmp_path) as m:
        out = m.add(TRANSCRIPT, user_id="alice")
        facts = sorted(r["memory"] for r in out["results"])
        assert facts == ["Alice is vegetarian", "Alice moved to Lisbon last month"]
        msgs = m.frame("messages", user_id="alice").sort("created_at")
        # the tool-call turn is not a message; the tool's answer is kept (as context), parts are joined
        assert msgs["role"].to_list().count("tool") == 1
        assert "I moved to Lisbon last month.\nI'm vegetarian." in msgs["content"].to_list()
        assert not any("find_restaurants" in c for c in msgs["content"].to_list())


def test_a_tool_result_is_never_a_memory_of_its_own(tmp_path):
    with _memory(tmp_path) as m:
        raw = m.add(TRANSCRIPT, user_id="bob", infer=False)["results"]
        texts = [r["memory"] for r in raw]
        assert not any("Ao 26 Vegan Food Project" in t for t in texts)       # the tool said it, not bob
        assert "Ao 26 is a vegan place open late." in texts
        assert len(texts) == 3          # system, user (joined parts), assistant; no tool call, no tool result


def test_the_llm_sees_tool_results_as_context_and_no_tool_call(tmp_path, llm_server):
    llm_server.push_chat(json.dumps({"facts": [{"text": "Alice moved to Lisbon", "attributed_to": "Alice"}]}))
    with _memory(tmp_path, base_url=llm_server.base_url) as m:
        assert [r["memory"] for r in m.add(TRANSCRIPT, user_id="alice")["results"]] == ["Alice moved to Lisbon"]
    prompt = _chat_bodies(llm_server)[-1]["messages"][-1]["content"]
    assert "tool result of find_restaurants (context only, not stated by a person): I am open late" in prompt
    assert "Alice: I moved to Lisbon last month.\nI'm vegetarian." in prompt
    assert '"city": "Lisbon"' not in prompt


def test_images_are_noted_when_the_llm_cannot_see(tmp_path):
    msg = {"role": "user", "content": [{"type": "text", "text": "My new bike"},
                                       {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg"}}]}
    image_only = {"role": "user", "content": {"type": "image_url", "image_url": {"url": "https://example.com/m.jpg"}}}
    with _memory(tmp_path) as m:
        texts = [r["memory"] for r in m.add([msg, image_only], user_id="carol", infer=False)["results"]]
    assert texts == ["My new bike\n[image]", "[image]"]


def test_images_are_described_by_a_vision_llm(tmp_path, llm_server):
    def answer(body):
        content = body["messages"][-1]["content"]
        if isinstance(content, list):       # the vision call: describe the picture it was sent
            url = next(p["image_url"]["url"] for p in content if p["type"] == "image_url")
            return "A red city bike." if url.endswith("b.jpg") else "A menu of vegan dishes."
        return json.dumps({"facts": [{"text": "Carol has a red city bike"}]})
    llm_server.chat_responder = answer
    msg = {"role": "user", "content": [{"type": "text", "text": "My new bike"},
                                       {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg",
                                                                           "detail": "low"}}]}
    with _memory(tmp_path, base_url=llm_server.base_url, vision=True, vision_detail="high") as m:
        out = m.add([msg, {"role": "user", "content": {"type": "image_url",
                                                        "image_url": {"url": "https://example.com/m.jpg"}}}],
                    user_id="carol")
        stored = m.frame("messages", user_id="carol")["content"].to_list()
    assert [r["memory"] for r in out["results"]] == ["Carol has a red city bike"]
    assert sorted(stored) == ["My new bike\n[image: A red city bike.]", "[image: A menu of vegan dishes.]"]
    vision = [b for b in _chat_bodies(llm_server) if isinstance(b["messages"][-1]["content"], list)]
    details = sorted(p["image_url"]["detail"] for b in vision for p in b["messages"][-1]["content"]
                     if p["type"] == "image_url")
    assert details == ["high", "low"]         # the part's own detail wins over llm.vision_detail
    assert "[image: A red city bike.]" in _chat_bodies(llm_server)[-1]["messages"][-1]["content"]


def test_a_failed_vision_call_stores_nothing(tmp_path, llm_server):
    llm_server.push_error(400, "model does not support images")
    msg = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/b.jpg"}}]}
    with _memory(tmp_path, base_url=llm_server.base_url, vision=True) as m:
        with pytest.raises(LLMError, match="image description"):
            m.add([msg], user_id="dan")
        assert m.frame("messages", user_id="dan").height == 0
        runs = m.frame("extraction_runs", user_id="dan")          # the failure is on record, as for extraction
        assert runs["status"].to_list() == ["llm_error"] and "image description" in runs["error"][0]
        assert len(runs["input_message_ids"][0]) == 1 and runs["input_message_ids"][0][0]


@pytest.mark.parametrize("messages, where", [
    ([{"role": "user"}], "message #0 has no 'content'"),
    ([{"role": "user", "content": "hi"}, 3], "message #1 is int"),
    ([{"role": "user", "content": 42}], "message #0 content is int"),
    ([{"role": "user", "content": [{"text": "no type"}]}], "message #0 content part #0 has no 'type'"),
    ([{"role": "user", "content": [{"type": "text"}]}], "message #0 content part #0 is a text part"),
    ([{"role": "user", "content": "ok"}, {"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
     "message #1 content part #0 is an image_url part without a url"),
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}], "tool call #0 has no function name"),
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "f"}}]}],
     "nothing to remember"),
])
def test_a_malformed_message_is_named(tmp_path, messages, where):
    with _memory(tmp_path) as m:
        with pytest.raises(InputError, match=where):
            m.add(messages, user_id="erin")
        assert m.get_all(user_id="erin")["results"] == []


def test_the_same_shapes_through_memstore_serve(tmp_path):
    """The HTTP client and the server's group commit take the same shapes (and procedural adds)."""
    from memstore.testing.server_process import ServerProcess

    with ServerProcess(tmp_path / "served.duckdb", config={"embedder": {"provider": "hashing"}}) as srv:
        m = srv.client()
        try:
            facts = sorted(r["memory"] for r in m.add(TRANSCRIPT, user_id="alice")["results"])
            assert facts == ["Alice is vegetarian", "Alice moved to Lisbon last month"]
            out = m.add(TRANSCRIPT, agent_id="planner", memory_type="procedural_memory")
            assert m.get(out["results"][0]["id"])["metadata"] == {"memory_type": "procedural_memory"}
            with pytest.raises(InputError, match="message #0 has no 'content'"):
                m.add([{"role": "user"}], user_id="alice")
        finally:
            m.close()


def test_any_openai_shaped_transcript_reads_without_error():
    """Property: any transcript of text-part turns, tool-call turns and tool answers is read: text parts
    joined in order, tool-call turns skipped, tool answers kept as context, nothing else dropped."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memstore.pipeline.message_shapes import read_messages

    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
    turn = st.one_of(
        st.tuples(st.just("parts"), st.sampled_from(["user", "assistant", "system"]), st.lists(text, max_size=4)),
        st.tuples(st.just("call"), st.just("assistant"), st.lists(st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
                                                                   min_size=1, max_size=3)),
        st.tuples(st.just("tool"), st.just("tool"), text))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(turn, min_size=1, max_size=8).filter(lambda ts: any(t[0] != "call" for t in ts)))
    def check(turns):
        raw, expected = [], []
        for n, (kind, role, value) in enumerate(turns):
            if kind == "parts":
                raw.append({"role": role, "content": [{"type": "text", "text": t} for t in value]})
                expected.append((role, "\n".join(value), False))
            elif kind == "call":
                raw.append({"role": role, "content": None, "tool_calls": [
                    {"id": f"c{n}-{i}", "type": "function", "function": {"name": f, "arguments": "{}"}}
                    for i, f in enumerate(value)]})
            else:
                raw.append({"role": role, "tool_call_id": "c0-0", "content": value})
                expected.append((role, value, True))
        got = read_messages(raw)
        assert [(m.role, m.content, m.context_only) for m in got] == expected

    check()
