"""mem0's procedural memory: add(messages, agent_id=..., memory_type="procedural_memory") stores ONE
memory summarising the agent's run, marked metadata memory_type="procedural_memory" (as mem0)."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.core.errors import ArgumentError, LLMError
from memstore.pipeline.summarise_procedure import FINAL_INSTRUCTION, SYSTEM_PROMPT

RUN = [
    {"role": "user", "content": "Find the cheapest flight from SFO to NYC on 12 May"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "search_flights", "arguments": '{"from": "SFO", "to": "NYC"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '[{"flight": "UA 512", "usd": 189}, {"flight": "DL 9", "usd": 240}]'},
    {"role": "assistant", "content": "UA 512 at $189 is the cheapest."},
]


def _memory(tmp_path, **llm):
    cfg = {"embedder": {"provider": "hashing"}}
    if llm:
        cfg["llm"] = {"provider": "openai", "api_key": "t", "model": "scripted-model", "max_retries": 0, **llm}
    return Memory(str(tmp_path / "p.duckdb"), config=cfg)


def test_offline_one_memory_records_each_step_and_result(tmp_path):
    with _memory(tmp_path) as m:
        out = m.add(RUN, agent_id="travel-agent", memory_type="procedural_memory")
        assert len(out["results"]) == 1
        mem = m.get(out["results"][0]["id"])
        assert mem["metadata"] == {"memory_type": "procedural_memory"}
        assert mem["agent_id"] == "travel-agent" and mem.get("user_id") is None
        text = mem["memory"]
        assert "**Task Objective**: Find the cheapest flight from SFO to NYC on 12 May" in text
        steps = [line for line in text.splitlines() if line[:1].isdigit()]
        assert steps == ['1. **Agent Action**: [called search_flights({"from": "SFO", "to": "NYC"})]',
                         "2. **Agent Action**: UA 512 at $189 is the cheapest."]
        assert '"flight": "UA 512", "usd": 189' in text                  # the tool's output, verbatim
        # the run itself is kept as messages; it is not mined for facts
        assert m.frame("messages", agent_id="travel-agent").height == 4
        hits = m.search("cheapest flight SFO", agent_id="travel-agent",
                        filters={"memory_type": "procedural_memory"})["results"]
        assert [h["id"] for h in hits] == [mem["id"]]


def test_with_an_llm_the_model_writes_the_summary(tmp_path, llm_server):
    llm_server.push_chat("```markdown\n## Summary of the agent's execution history\n**Task Objective**: cheap "
                         "flight\n1. **Agent Action**: search_flights\n```")
    with _memory(tmp_path, base_url=llm_server.base_url) as m:
        out = m.add(RUN, agent_id="travel-agent", memory_type="procedural_memory", metadata={"team": "ops"})
        mem = m.get(out["results"][0]["id"])
    assert mem["memory"].startswith("## Summary of the agent's execution history")
    assert "```" not in mem["memory"]
    assert mem["metadata"] == {"team": "ops", "memory_type": "procedural_memory"}
    body = llm_server.requests[-1]["json"]
    assert body["messages"][0]["content"] == SYSTEM_PROMPT and body["messages"][-1]["content"] == FINAL_INSTRUCTION
    history = body["messages"][1]["content"]
    assert '[called search_flights({"from": "SFO", "to": "NYC"})]' in history
    assert "tool result (search_flights): [{" in history
    assert "response_format" not in body          # a text answer, not JSON


def test_an_empty_llm_answer_stores_nothing(tmp_path, llm_server):
    llm_server.push_chat("   ")
    with _memory(tmp_path, base_url=llm_server.base_url) as m:
        with pytest.raises(LLMError, match="no text for the procedural summary"):
            m.add(RUN, agent_id="travel-agent", memory_type="procedural_memory")
        assert m.get_all(agent_id="travel-agent")["results"] == []


@pytest.mark.parametrize("kwargs, match", [
    ({"user_id": "alice", "memory_type": "procedural_memory"}, "needs agent_id"),
    ({"agent_id": "a", "memory_type": "episodic_memory"}, "'episodic_memory' is not supported"),
])
def test_wrong_use_is_an_argument_error(tmp_path, kwargs, match):
    with _memory(tmp_path) as m:
        with pytest.raises(ArgumentError, match=match):
            m.add(RUN, **kwargs)
