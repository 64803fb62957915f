"""mem0's config dict accepted by Memory.from_config / Memory(config=...): llm, embedder and reranker
sections mapped onto memstore's; vector_store, graph_store, history_db_path read for import-mem0 and
otherwise ignored with ONE warning; a provider memstore cannot call is an error naming it."""
from __future__ import annotations

import json
import uuid
import warnings

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError
from memstore.core.mem0_config import Mem0ConfigWarning, is_mem0_config, map_mem0_config
from memstore.testing.openai_server import ScriptedOpenAIServer


def _llm(provider, env=None, **conf):
    return map_mem0_config({"llm": {"provider": provider, "config": conf}}, env=env or {}).config.llm


@pytest.mark.parametrize("provider, conf, env, base_url, model, key", [
    ("openai", {"model": "gpt-4o"}, {"OPENAI_API_KEY": "sk-1"}, None, "gpt-4o", "sk-1"),
    ("openai", {"openai_base_url": "http://gw/v1"}, {}, "http://gw/v1", "gpt-4o-mini", None),
    ("openai", {}, {"OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k"}, "http://env/v1", "gpt-4o-mini", "k"),
    ("openai", {"model": "x"}, {"OPENROUTER_API_KEY": "or"}, "https://openrouter.ai/api/v1", "x", "or"),
    ("ollama", {"model": "llama3.1", "ollama_base_url": "http://gpu:11434"}, {}, "http://gpu:11434/v1", "llama3.1",
     "ollama"),
    ("lmstudio", {"model": "qwen"}, {}, "http://localhost:1234/v1", "qwen", "lm-studio"),
    ("vllm", {}, {"VLLM_BASE_URL": "http://v:8000/v1"}, "http://v:8000/v1", "Qwen/Qwen2.5-32B-Instruct",
     "vllm-api-key"),
    ("deepseek", {}, {"DEEPSEEK_API_KEY": "d"}, "https://api.deepseek.com", "deepseek-chat", "d"),
    ("groq", {"model": "llama-3.1-8b-instant"}, {"GROQ_API_KEY": "g"}, "https://api.groq.com/openai/v1",
     "llama-3.1-8b-instant", "g"),
    ("together", {"model": "m", "api_key": "t"}, {}, "https://api.together.xyz/v1", "m", "t"),
    ("azure_openai", {"azure_kwargs": {"azure_endpoint": "https://res.openai.azure.com/", "azure_deployment": "dep",
                                       "api_key": "az", "api_version": "2024-10-21"}}, {},
     "https://res.openai.azure.com/openai/v1/", "dep", "az"),
])
def test_openai_compatible_llms_map_to_base_url_and_model(provider, conf, env, base_url, model, key):
    cfg = _llm(provider, env, **conf)
    assert (cfg.provider, cfg.base_url, cfg.model, cfg.api_key) == ("openai", base_url, model, key)


def test_llm_settings_that_carry_over():
    cfg = _llm("openai", temperature=0.1, enable_vision=True, vision_details="high")
    assert (cfg.temperature, cfg.vision, cfg.vision_detail) == (0.1, True, "high")
    assert _llm("lmstudio").json_mode is False          # LM Studio refuses response_format json_object


@pytest.mark.parametrize("conf, expected", [
    ({"provider": "openai", "config": {}}, ("openai", "text-embedding-3-small", 1536)),
    ({"provider": "openai", "config": {"model": "text-embedding-3-large"}}, ("openai", "text-embedding-3-large", 3072)),
    ({"provider": "ollama", "config": {"model": "nomic-embed-text"}}, ("openai", "nomic-embed-text", 768)),
    ({"provider": "huggingface", "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"}},
     ("local", "all-MiniLM-L6-v2-int8", None)),
    ({"provider": "fastembed", "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"}},
     ("local", "all-MiniLM-L6-v2-int8", None)),
    ({"provider": "huggingface", "config": {"huggingface_base_url": "http://tei:8080/v1", "embedding_dims": 1024}},
     ("openai", "tei", 1024)),
])
def test_embedders_map(conf, expected):
    cfg = map_mem0_config({"embedder": conf}, env={}).config.embedder
    assert (cfg.provider, cfg.model, cfg.dims) == expected


@pytest.mark.parametrize("section, provider, names", [
    ("llm", "anthropic", ["'anthropic'", "https://api.anthropic.com/v1/"]),
    ("llm", "gemini", ["'gemini'", "generativelanguage.googleapis.com"]),
    ("llm", "aws_bedrock", ["'aws_bedrock'", "LiteLLM proxy"]),
    ("llm", "litellm", ["'litellm'", "openai_base_url"]),
    ("llm", "no-such-llm", ["unknown mem0 llm provider 'no-such-llm'", "ollama"]),
    ("embedder", "vertexai", ["'vertexai'", "openai_base_url"]),
    ("embedder", "huggingface", ["'multi-qa-MiniLM-L6-cos-v1'", "huggingface_base_url"]),
    ("embedder", "fastembed", ["'thenlper/gte-large'", "sentence-transformers/all-MiniLM-L6-v2"]),
    ("reranker", "cohere", ["'cohere'", '"provider": "llm"', "memory.reranker"]),
    ("reranker", "sentence_transformer", ["'sentence_transformer'", "memory.reranker"]),
])
def test_a_provider_memstore_cannot_call_is_named_with_the_alternative(section, provider, names):
    with pytest.raises(ConfigError) as err:
        map_mem0_config({section: {"provider": provider, "config": {}}}, env={})
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize("config, key", [
    ({"llm": {"provider": "openai", "config": {"modle": "gpt-4o"}}}, "llm.config.modle"),
    ({"embedder": {"provider": "openai", "config": {"embeding_dims": 3}}}, "embedder.config.embeding_dims"),
    ({"llm": {"provider": "openai", "config": {}, "extra": 1}}, "llm.extra"),
    ({"vectorstore": {"provider": "qdrant"}, "history_db_path": "h.db"}, "vectorstore"),
    ({"llm": {"provider": "openai", "config": {"vision_details": "max"}}}, "llm.vision_detail"),
])
def test_an_unknown_key_is_named(config, key):
    with pytest.raises(ConfigError) as err:
        map_mem0_config(config, env={})
    assert err.value.fields["key"] == key


def test_where_the_old_data_is_and_one_warning_saying_why(tmp_path, recwarn):
    warnings.simplefilter("always")
    config = {"vector_store": {"provider": "qdrant", "config": {"path": "/data/qdrant", "collection_name": "mems",
                                                                "embedding_model_dims": 384}},
              "graph_store": {"provider": "neo4j", "config": {"url": "bolt://x"}},
              "history_db_path": "/data/history.db",
              "embedder": {"provider": "huggingface", "config": {"model": "all-MiniLM-L6-v2"}},
              "llm": {"provider": "ollama", "config": {"model": "llama3.1", "max_tokens": 2000}},
              "version": "v1.1", "path": str(tmp_path / "s.duckdb")}
    mapping = map_mem0_config(config, env={})
    assert (mapping.sources.qdrant_path, mapping.sources.collection, mapping.sources.history_db_path) == \
        ("/data/qdrant", "mems", "/data/history.db")
    m = Memory.from_config(config)
    try:
        ours = [w for w in recwarn.list if issubclass(w.category, Mem0ConfigWarning)]
        assert len(ours) == 1
        text = str(ours[0].message)
        for part in ("vector_store (qdrant", "graph_store", "history_db_path", "llm.config.max_tokens",
                     "import-mem0"):
            assert part in text
        assert m.config.path == str(tmp_path / "s.duckdb") and m.config.embedder.provider == "local"
    finally:
        m.close()
    remote = map_mem0_config({"vector_store": {"provider": "qdrant", "config": {"host": "qdrant", "port": 6333}}})
    assert remote.sources.qdrant_path is None
    assert map_mem0_config({"llm": {"provider": "openai", "config": {}}}).sources.qdrant_path == "/tmp/qdrant"


def test_memstore_s_own_config_is_not_taken_for_mem0_s(tmp_path):
    ours = {"path": str(tmp_path / "o.duckdb"), "llm": {"provider": "heuristic"}, "embedder": {"provider": "hashing"}}
    assert not is_mem0_config(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Memory.from_config(ours).close()


def test_from_config_and_config_kwarg_run_on_the_mapped_endpoints(tmp_path, monkeypatch):
    with ScriptedOpenAIServer(embed_dim=1536) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        config = {"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "temperature": 0.1}},
                  "embedder": {"provider": "openai", "config": {"model": "text-embedding-3-small"}},
                  "reranker": {"provider": "llm", "config": {"model": "gpt-4.1-nano"}},
                  "path": str(tmp_path / "e.duckdb")}
        srv.push_chat(json.dumps({"facts": [{"text": "Alex loves basketball"}]}))
        with _no_warning():
            first = Memory.from_config(config)
        with first:
            assert [r["memory"] for r in first.add("I love basketball", user_id="alex")["results"]] == \
                ["Alex loves basketball"]
            srv.push_chat("0.7")
            hit = first.search("sports", filters={"user_id": "alex"}, rerank=True)["results"][0]
            assert hit["rerank_score"] == 0.7
        with Memory(config=config) as second:          # the same store, the same mapping
            assert second.get_all(user_id="alex")["results"][0]["memory"] == "Alex loves basketball"
        chats = [r for r in srv.requests if r["path"].endswith("/chat/completions")]
        embeds = [r for r in srv.requests if r["path"].endswith("/embeddings")]
        assert [c["json"]["model"] for c in chats] == ["gpt-4o-mini", "gpt-4.1-nano"]
        assert chats[0]["json"]["temperature"] == 0.1
        assert {e["json"]["model"] for e in embeds} == {"text-embedding-3-small"}
        assert {r["headers"]["authorization"] for r in srv.requests} == {"Bearer sk-from-env"}


class _no_warning(warnings.catch_warnings):
    """Nothing ignored: no warning at all."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("error", Mem0ConfigWarning)
        return out


def _mem0_store(tmp_path):
    pytest.importorskip("qdrant_client")
    from memstore.integrations.mem0_fixture import mem0_payload, write_mem0_store

    ids = [str(uuid.uuid4()) for _ in range(2)]
    points = [(ids[0], [1.0] + [0.0] * 383, mem0_payload("Lives in Porto", created_at="2024-01-01", user_id="ana")),
              (ids[1], [0.0, 1.0] + [0.0] * 382, mem0_payload("Plays chess", created_at="2024-01-02", user_id="ana"))]
    history = [{"id": str(uuid.uuid4()), "memory_id": ids[0], "event": "ADD", "new_memory": "Lives in Porto",
                "created_at": "2024-01-01"}]
    write_mem0_store(tmp_path / "q", tmp_path / "h.db", points, dim=384, history=history, collection="mine")
    return {"vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "q"), "collection_name": "mine"}},
            "history_db_path": str(tmp_path / "h.db"),
            "embedder": {"provider": "huggingface", "config": {"model": "sentence-transformers/all-MiniLM-L6-v2"}}}


def test_import_mem0_finds_the_old_data_through_the_config(tmp_path):
    mem0_config = _mem0_store(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Mem0ConfigWarning)
        m = Memory.from_config({**mem0_config, "path": str(tmp_path / "new.duckdb")})
    with m:
        report = m.import_mem0()
        assert (report["read"], report["imported"], report["history_imported"]) == (2, 2, 1)
        assert sorted(r["memory"] for r in m.get_all(user_id="ana")["results"]) == ["Lives in Porto", "Plays chess"]
        assert m.import_mem0()["imported"] == 0                      # idempotent


def test_cli_import_mem0_reads_a_yaml_mem0_config(tmp_path, capsys):
    import yaml

    from memstore.cli import main

    mem0_config = _mem0_store(tmp_path)
    (tmp_path / "mem0.yaml").write_text(yaml.safe_dump(mem0_config))
    store = str(tmp_path / "cli.duckdb")
    assert main(["import-mem0", "--mem0-config", str(tmp_path / "mem0.yaml"), "--store", store]) == 0
    assert "imported 2" in capsys.readouterr().out
    assert main(["import-mem0", "--mem0-config", str(tmp_path / "missing.yaml"), "--store", store]) == 1
    assert "no mem0 config file" in capsys.readouterr().err
