"""ScriptedOpenAIServer exercised through the real ``openai`` client (no mocks)."""

from __future__ import annotations

import math
import threading
import time

import openai
import pytest

from memstore.testing.openai_server import ScriptedOpenAIServer


def _client(srv: ScriptedOpenAIServer, **kw) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=srv.base_url, api_key="test", **kw)


def _ask(client: openai.OpenAI, text: str = "hi", **kw) -> str:
    resp = client.chat.completions.create(model="scripted-model", messages=[{"role": "user", "content": text}], **kw)
    assert resp.choices[0].finish_reason == "stop" and resp.choices[0].message.role == "assistant"
    return resp.choices[0].message.content


@pytest.fixture
def srv():
    with ScriptedOpenAIServer() as s:
        yield s


def test_chat_round_trip_and_recording(srv):
    srv.push_chat('{"facts": ["likes tea"]}')
    client = _client(srv)
    resp = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "I like tea"}])
    assert resp.object == "chat.completion"
    assert resp.model == "gpt-x"
    assert resp.choices[0].message.content == '{"facts": ["likes tea"]}'
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens > 0
    assert srv.chat_calls == 1
    req = srv.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["json"]["messages"][0]["content"] == "I like tea"
    assert req["headers"]["authorization"] == "Bearer test"


def test_fifo_order_and_empty_queue_fails_loudly(srv):
    for s in ("one", "two", "three"):
        srv.push_chat(s)
    client = _client(srv)
    assert [_ask(client) for _ in range(3)] == ["one", "two", "three"]
    with pytest.raises(openai.InternalServerError, match="no scripted answer queued"):
        _ask(client)


def test_chat_responder_and_stream_rejected():
    with ScriptedOpenAIServer(chat_responder=lambda req: req["messages"][-1]["content"].upper()) as srv:
        client = _client(srv)
        assert _ask(client, "echo me") == "ECHO ME"
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)


def test_429_without_and_with_retry(srv):
    srv.push_error(429, "slow down", retry_after=0.05)
    with pytest.raises(openai.RateLimitError) as ei:
        _ask(_client(srv, max_retries=0))
    assert ei.value.status_code == 429
    assert ei.value.response.headers["retry-after"] == "0.05"
    assert "slow down" in str(ei.value)

    srv.push_error(429, retry_after=0.05)
    srv.push_chat("after retry")
    t0 = time.perf_counter()
    assert _ask(_client(srv, max_retries=1)) == "after retry"
    assert time.perf_counter() - t0 < 2.0  # honoured the short Retry-After
    assert srv.chat_calls == 3


def test_500_and_400_errors(srv):
    srv.push_error(500, "boom")
    srv.push_error(400, "bad input")
    client = _client(srv)
    with pytest.raises(openai.InternalServerError, match="boom"):
        _ask(client)
    with pytest.raises(openai.BadRequestError, match="bad input") as ei:
        _ask(client)
    assert ei.value.body["type"] == "invalid_request_error"


def test_disconnect_is_connection_error(srv):
    srv.push_disconnect()
    srv.push_chat("still works")
    client = _client(srv)
    with pytest.raises(openai.APIConnectionError) as ei:
        _ask(client)
    assert not isinstance(ei.value, openai.APITimeoutError)
    assert _ask(client) == "still works"


def test_delay_provokes_client_timeout(srv):
    srv.push_delay(1.5)
    srv.push_chat("too late")
    srv.push_chat("on time")
    client = _client(srv, timeout=0.2)
    t0 = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        _ask(client)
    assert time.perf_counter() - t0 < 1.0
    assert _ask(client) == "on time"


def test_embeddings_shape_determinism_and_similarity(srv):
    client = _client(srv)
    texts = ["I love green tea", "i LOVE green tea!", "the stock market crashed"]
    a = client.embeddings.create(model="emb", input=texts)  # client default (base64 in openai>=1.x)
    b = client.embeddings.create(model="emb", input=texts, encoding_format="float")
    assert len(a.data) == 3 and [d.index for d in a.data] == [0, 1, 2]
    va, vb = [d.embedding for d in a.data], [d.embedding for d in b.data]
    assert all(len(v) == 384 for v in va)
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5) for v in va)
    assert all(math.isclose(x, y, abs_tol=1e-6) for u, w in zip(va, vb) for x, y in zip(u, w))
    assert srv.requests[-2]["json"].get("encoding_format") in ("base64", None)
    assert srv.requests[-1]["json"]["encoding_format"] == "float"
    cos = lambda u, w: sum(x * y for x, y in zip(u, w))  # noqa: E731
    assert cos(va[0], va[1]) > 0.99 and abs(cos(va[0], va[2])) < 0.5
    single = client.embeddings.create(model="emb", input="I love green tea")
    assert single.data[0].embedding == pytest.approx(va[0], abs=1e-6)
    assert srv.embed_calls == 3


def test_embed_responder_and_models():
    with ScriptedOpenAIServer(embed_responder=lambda ts: [[float(len(t)), 0.5] for t in ts], model="m1") as srv:
        client = _client(srv)
        out = client.embeddings.create(model="m1", input=["abc", "hello"])
        assert [d.embedding for d in out.data] == [[3.0, 0.5], [5.0, 0.5]]
        assert [m.id for m in client.models.list()] == ["m1"]


def test_16_concurrent_calls_with_latency():
    with ScriptedOpenAIServer(chat_responder=lambda req: "ok", latency_s=0.3) as srv:
        client = _client(srv, timeout=openai.Timeout(10.0))   # openai 3.x builds on httpx2: its own Timeout
        results: list[str] = []
        lock = threading.Lock()

        def worker() -> None:
            out = _ask(client)
            with lock:
                results.append(out)

        threads = [threading.Thread(target=worker) for _ in range(16)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        assert results == ["ok"] * 16
        assert wall < 1.5, f"16 concurrent calls took {wall:.2f}s"
        assert srv.chat_calls == 16 and len(srv.requests) == 16


def test_stop_is_prompt_and_idempotent():
    srv = ScriptedOpenAIServer(latency_s=5.0, chat_responder=lambda req: "x").start()
    client = _client(srv, timeout=10.0)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            _ask(client)
        except BaseException as exc:
            outcome.append(exc)

    th = threading.Thread(target=call)
    th.start()
    time.sleep(0.2)
    t0 = time.perf_counter()
    srv.stop()
    srv.stop()
    th.join(timeout=3)
    assert time.perf_counter() - t0 < 3.0 and not th.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], openai.APIConnectionError)
