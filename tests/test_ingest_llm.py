"""Ingest through an LLM: the real `openai` client against ScriptedOpenAIServer (a real HTTP server).
Calls run concurrently within the bound, transport errors and rate limits are retried, a batch
sees its conversation's earlier messages, and a failed conversation is recorded and completed by a
re-run."""
from __future__ import annotations

import json
import re
import threading
import time

from memstore import Memory
from memstore.testing.openai_server import ScriptedOpenAIServer

LINE = re.compile(r"^(?P<who>[^\[\n:]+?)(?: \[[^\]]*\])?: (?P<text>.*)$", re.MULTILINE)


class Responder:
    """Answers like an extraction model: "I live in X" → "<Name> lives in X"; "I like X" → "<Name>
    likes X". Names the stored memory a move replaces (by its short id). Records peak concurrency."""

    def __init__(self, hold_s: float = 0.0) -> None:
        self.hold_s, self.active, self.peak = hold_s, 0, 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(self.hold_s)
            prompt = body["messages"][-1]["content"]
            stored = dict(re.findall(r"^(m\d+): (.*)$", prompt.split("New messages:")[0], re.MULTILINE))
            facts = []
            for m in LINE.finditer(prompt.split("New messages:")[1]):
                who, text = m.group("who").strip(), m.group("text")
                if who == "assistant":
                    continue
                if place := re.search(r"I live in (\w+)", text):
                    fact = f"{who} lives in {place.group(1)}"
                    old = [k for k, v in stored.items() if v.startswith(f"{who} lives in ") and v != fact]
                    facts.append({"text": fact, "attributed_to": who, "supersedes": old})
                elif like := re.search(r"I like (\w+)", text):
                    facts.append({"text": f"{who} likes {like.group(1)}", "attributed_to": who})
            return json.dumps({"facts": facts})
        finally:
            with self.lock:
                self.active -= 1


def claude_export(convs: list[list[str]], day0: int = 1) -> list[dict]:
    out = []
    for n, turns in enumerate(convs):
        msgs = []
        for k, text in enumerate(turns):
            msgs.append({"uuid": f"c{day0 + n - 1}-m{k}", "sender": "human" if k % 2 == 0 else "assistant", "text": text,
                         "created_at": f"2024-01-{day0 + n:02d}T10:{k:02d}:00Z"})
        out.append({"uuid": f"c{day0 + n - 1}", "name": f"chat {n}", "created_at": f"2024-01-{day0 + n:02d}T10:00:00Z",
                    "chat_messages": msgs})
    return out


def llm_memory(path: str, server: ScriptedOpenAIServer) -> Memory:
    return Memory(path, config={"embedder": {"provider": "hashing"},
                                "llm": {"provider": "openai", "base_url": server.base_url, "api_key": "test",
                                        "model": "scripted-model", "max_retries": 0, "timeout": 10}})


def chat_requests(server: ScriptedOpenAIServer) -> list[str]:
    return [r["json"]["messages"][-1]["content"] for r in server.requests if r["path"].endswith("/chat/completions")]


def test_calls_run_concurrently_within_the_bound(tmp_path):
    responder = Responder(hold_s=0.1)
    convs = [[f"I like tea{n}", "ok", "Tell me a joke", "ha"] for n in range(24)]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(claude_export(convs)))
    with ScriptedOpenAIServer(chat_responder=responder) as srv, llm_memory(str(tmp_path / "s.duckdb"), srv) as m:
        r = m.ingest(p, user_id="kim", batch_size=2, concurrency=4)
        assert r.status == "done" and r.messages["stored"] == 96
        assert srv.chat_calls == 48 and sum(r.extraction_runs.values()) == 48
        assert r.extraction_runs["ok"] == 24 and r.extraction_runs["empty"] == 24
        assert 2 <= responder.peak <= 4
        assert r.memories["added"] == 24
        assert m.db.scalar("SELECT count(*) FROM extraction_runs WHERE extractor = 'llm'") == 48


def test_a_batch_sees_its_conversations_earlier_messages(tmp_path):
    convs = [["I like tea", "nice", "I live in Oslo", "cold", "I like skiing", "fun"]]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(claude_export(convs)))
    with ScriptedOpenAIServer(chat_responder=Responder()) as srv, llm_memory(str(tmp_path / "s.duckdb"), srv) as m:
        m.ingest(p, user_id="kim", batch_size=2, concurrency=1)
        prompts = chat_requests(srv)
        assert len(prompts) == 3
        assert "Earlier messages" not in prompts[0]
        earlier = prompts[2].split("Earlier messages (context only):")[1].split("New messages:")[0]
        assert "I like tea" in earlier and "I live in Oslo" in earlier and "I like skiing" not in earlier
        # every memory lists the messages of the batch it came from, which keep their source ids
        rows = m.db.dicts("x", sql="""SELECT mem.memory, list_sort(list(msg.source_message_id)) AS src
            FROM memories mem, unnest(mem.source_message_ids) AS u(mid) JOIN messages msg ON msg.id = u.mid
            GROUP BY mem.memory ORDER BY mem.memory""")
        assert rows == [{"memory": "Kim likes skiing", "src": ["c0-m4", "c0-m5"]},
                        {"memory": "Kim likes tea", "src": ["c0-m0", "c0-m1"]},
                        {"memory": "Kim lives in Oslo", "src": ["c0-m2", "c0-m3"]}]


def test_rate_limits_and_dropped_connections_are_retried(tmp_path):
    convs = [["I like tea", "ok"], ["I like jazz", "ok"], ["I like chess", "ok"]]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(claude_export(convs)))
    with ScriptedOpenAIServer(chat_responder=Responder()) as srv, llm_memory(str(tmp_path / "s.duckdb"), srv) as m:
        srv.push_error(429, "slow down", retry_after=0)
        srv.push_disconnect()
        srv.push_error(503, "overloaded")
        r = m.ingest(p, user_id="kim", concurrency=2, backoff_s=0.01)
        assert r.status == "done" and r.messages["stored"] == 6 and r.messages["failed"] == 0
        assert srv.chat_calls == 3 + 3
        assert {x["memory"] for x in m.get_all(user_id="kim")["results"]} == \
            {"Kim likes tea", "Kim likes jazz", "Kim likes chess"}


def test_a_refused_call_fails_its_conversation_only_and_a_rerun_completes_it(tmp_path):
    convs = [["I like tea", "ok"], ["I like jazz", "ok"], ["I like chess", "ok"]]
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps(claude_export(convs)))
    with ScriptedOpenAIServer(chat_responder=Responder()) as srv, llm_memory(str(tmp_path / "s.duckdb"), srv) as m:
        srv.push_error(400, "bad request")          # not retryable: the first (oldest) conversation fails
        r = m.ingest(p, user_id="kim", concurrency=1, backoff_s=0.01)
        assert r.status == "done_with_problems" and r.balanced()
        assert (r.conversations["failed"], r.messages["failed"], r.messages["stored"]) == (1, 2, 4)
        failed = [x for x in r.problems if x.severity == "failed"]
        assert [x.conversation for x in failed] == ["c0"] and "extraction failed: LLMError" in failed[0].reason
        assert m.db.rows("x", sql="SELECT status, input_message_ids FROM extraction_runs WHERE status = 'llm_error'")[0][1]
        assert m.db.scalar("SELECT count(*) FROM messages WHERE source_conversation = 'c0'") == 0
        again = m.ingest(p, user_id="kim", backoff_s=0.01)
        assert again.status == "done" and (again.messages["stored"], again.messages["already_ingested"]) == (2, 4)
        assert m.db.scalar("SELECT count(*) FROM messages") == 6


def test_moves_are_superseded_in_time_order_by_slot_and_by_the_llm(tmp_path):
    first = tmp_path / "jan.json"
    first.write_text(json.dumps(claude_export([["I live in Boston", "ok"]], day0=1)))
    later = tmp_path / "feb.json"
    later.write_text(json.dumps(claude_export([["I live in Denver", "ok"], ["I live in Austin", "ok"]], day0=10)))
    with ScriptedOpenAIServer(chat_responder=Responder()) as srv, llm_memory(str(tmp_path / "s.duckdb"), srv) as m:
        m.ingest(first, user_id="kim")
        r = m.ingest(later, user_id="kim", concurrency=4)
        assert r.memories["superseded"] == 2
        # Boston was stored before: the model saw it and named it (short id mapped back to its id)
        assert any("Kim lives in Boston" in p.split("New messages:")[0] for p in chat_requests(srv)[1:])
        current = {x["memory"] for x in m.get_all(user_id="kim")["results"]}
        assert current == {"Kim lives in Austin"}
        links = m.db.rows("x", sql="""SELECT s.memory, d.memory FROM memory_links l JOIN memories s ON s.id = l.src_id
                                      JOIN memories d ON d.id = l.dst_id WHERE l.kind = 'supersedes' ORDER BY 1""")
        # Austin's batch ran alongside Denver's and saw only Boston; the slot rule, applied in time order
        # at write, makes Austin replace Denver all the same
        assert {("Kim lives in Austin", "Kim lives in Denver"), ("Kim lives in Denver", "Kim lives in Boston")} <= set(links)
