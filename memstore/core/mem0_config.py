"""mem0's config dict, read into memstore's (`Memory.from_config(mem0_config)`, `Memory(config=...)`).

mem0 configures each component as `{"provider": ..., "config": {...}}`. Here:

- `llm`: every provider that speaks the OpenAI chat API (openai, azure_openai, ollama, lmstudio,
  vllm, deepseek, groq, together, xai, minimax, sarvam) becomes memstore's `openai` extractor with
  that provider's base URL, key (from the config or the environment variable mem0 reads) and model;
  `enable_vision` / `vision_details` become `llm.vision` / `llm.vision_detail`.
- `embedder`: OpenAI-compatible embedders likewise (with the model's dimension); `huggingface` and
  `fastembed` become the bundled all-MiniLM-L6-v2 when that is the model, a `huggingface_base_url`
  (a TEI server) the `openai` embedder; any other local model is an error.
- `reranker`: `llm` becomes an LLM reranker for `search(rerank=True)`; the others are refused.
- `custom_instructions`: the extraction instructions of every add() that passes no `prompt=` (as mem0).
- `vector_store`, `graph_store`, `history_db_path`: memstore keeps everything in its one DuckDB
  file, so they are not used to store anything; they say where the old mem0 data is
  (`Mem0Sources`, for `import_mem0()` / `memstore import-mem0 --mem0-config`). One warning lists
  what was ignored and why.
- a provider memstore cannot serve is a ConfigError naming it and what to use instead; an unknown
  key is a ConfigError naming the key. memstore's own top-level keys (`path`, `top_k`, ...) may sit
  next to mem0's.

Pure: reads the dict (and the environment it is given), builds the config, raises; no I/O.

>>> m = map_mem0_config({"llm": {"provider": "ollama", "config": {"model": "llama3.1"}},
...                      "vector_store": {"provider": "qdrant", "config": {"path": "/tmp/q"}}}, env={})
>>> m.config.llm.provider, m.config.llm.base_url, m.config.llm.model, m.sources.qdrant_path
('openai', 'http://localhost:11434/v1', 'llama3.1', '/tmp/q')
>>> map_mem0_config({"llm": {"provider": "anthropic", "config": {}}}, env={})
Traceback (most recent call last):
...
memstore.core.errors.ConfigError: mem0 llm provider 'anthropic' is not one memstore can call (memstore talks to OpenAI-compatible endpoints) — use Anthropic's OpenAI-compatible endpoint: {"llm": {"provider": "openai", "config": {"openai_base_url": "https://api.anthropic.com/v1/", "model": "claude-...", "api_key": "..."}}}
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memstore.core.config import EmbedderConfig, LLMConfig, MemoryConfig
from memstore.core.errors import ConfigError

__all__ = ["Mem0ConfigWarning", "Mem0Mapping", "Mem0Sources", "from_mem0_or_ours", "is_mem0_config", "map_mem0_config"]

MEM0_ONLY_KEYS = frozenset({"vector_store", "graph_store", "history_db_path", "reranker", "version",
                            "custom_instructions"})
MEM0_QDRANT_PATH = "/tmp/qdrant"       # mem0's defaults (mem0/configs/vector_stores/qdrant.py, configs/base.py)
MEM0_COLLECTION = "mem0"
MEM0_HISTORY = os.path.join("~", ".mem0", "history.db")

_T = TypeVar("_T")


class Mem0ConfigWarning(UserWarning):
    """Parts of a mem0 config that memstore does not use (the message says which and why)."""


@dataclass(frozen=True)
class _Provider:
    base_key: str | None          # the key of mem0's config that holds the base URL
    base_env: str | None          # the environment variable mem0 reads for it
    base_default: str | None
    key_env: str | None           # the environment variable mem0 reads for the API key
    key_default: str | None = None
    model: str | None = None      # mem0's default model (None: memstore's default)
    suffix: str = ""              # appended to the base URL (Ollama's OpenAI API lives under /v1)
    json_mode: bool = True


LLM_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider("openai_base_url", "OPENAI_BASE_URL", None, "OPENAI_API_KEY"),
    "openai_structured": _Provider("openai_base_url", "OPENAI_BASE_URL", None, "OPENAI_API_KEY"),
    "ollama": _Provider("ollama_base_url", None, "http://localhost:11434", None, "ollama", "llama3.1:70b", "/v1"),
    "lmstudio": _Provider("lmstudio_base_url", None, "http://localhost:1234/v1", None, "lm-studio",
                          "lmstudio-community/Meta-Llama-3.1-70B-Instruct-GGUF/Meta-Llama-3.1-70B-Instruct-IQ2_M.gguf",
                          json_mode=False),
    "vllm": _Provider("vllm_base_url", "VLLM_BASE_URL", "http://localhost:8000/v1", "VLLM_API_KEY", "vllm-api-key",
                      "Qwen/Qwen2.5-32B-Instruct"),
    "deepseek": _Provider("deepseek_base_url", "DEEPSEEK_API_BASE", "https://api.deepseek.com", "DEEPSEEK_API_KEY",
                          model="deepseek-chat"),
    "groq": _Provider(None, None, "https://api.groq.com/openai/v1", "GROQ_API_KEY", model="llama-3.3-70b-versatile"),
    "together": _Provider(None, None, "https://api.together.xyz/v1", "TOGETHER_API_KEY",
                          model="MiniMaxAI/MiniMax-M3"),
    "xai": _Provider("xai_base_url", "XAI_API_BASE", "https://api.x.ai/v1", "XAI_API_KEY", model="grok-4.3"),
    "minimax": _Provider("minimax_base_url", "MINIMAX_API_BASE", "https://api.minimax.io/v1", "MINIMAX_API_KEY",
                         model="MiniMax-M2.7"),
    "sarvam": _Provider("sarvam_base_url", "SARVAM_API_BASE", "https://api.sarvam.ai/v1", "SARVAM_API_KEY",
                        model="sarvam-m"),
}
AZURE = ("azure_openai", "azure_openai_structured")
_LLM_REFUSED = {
    "anthropic": "use Anthropic's OpenAI-compatible endpoint: {\"llm\": {\"provider\": \"openai\", \"config\": "
                 "{\"openai_base_url\": \"https://api.anthropic.com/v1/\", \"model\": \"claude-...\", \"api_key\": "
                 "\"...\"}}}",
    "gemini": "use Gemini's OpenAI-compatible endpoint: {\"llm\": {\"provider\": \"openai\", \"config\": "
              "{\"openai_base_url\": \"https://generativelanguage.googleapis.com/v1beta/openai/\", \"model\": "
              "\"gemini-2.0-flash\", \"api_key\": \"...\"}}}",
    "aws_bedrock": "use Bedrock through an OpenAI-compatible gateway (e.g. a LiteLLM proxy): {\"llm\": "
                   "{\"provider\": \"openai\", \"config\": {\"openai_base_url\": \"http://gateway/v1\", \"model\": \"...\"}}}",
    "litellm": "run LiteLLM as a proxy (`litellm --model ...`) and point provider \"openai\" at it with openai_base_url",
    "langchain": "a LangChain model object cannot be configured by a dict; point provider \"openai\" at an "
                 "OpenAI-compatible endpoint with openai_base_url",
}
_LLM_KEYS = frozenset({"model", "temperature", "api_key", "enable_vision", "vision_details", "azure_kwargs",
                       "openrouter_base_url"})
_LLM_IGNORED = frozenset({"max_tokens", "top_p", "top_k", "http_client_proxies", "reasoning_effort",
                          "is_reasoning_model", "models", "route", "site_url", "app_name", "store",
                          "response_callback", "lmstudio_response_format", "default_headers"})

EMBED_PROVIDERS: dict[str, _Provider] = {
    "openai": _Provider("openai_base_url", "OPENAI_BASE_URL", None, "OPENAI_API_KEY", model="text-embedding-3-small"),
    "ollama": _Provider("ollama_base_url", None, "http://localhost:11434", None, "ollama", "nomic-embed-text", "/v1"),
    "lmstudio": _Provider("lmstudio_base_url", None, "http://localhost:1234/v1", None, "lm-studio",
                          "nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.f16.gguf"),
    "together": _Provider(None, None, "https://api.together.xyz/v1", "TOGETHER_API_KEY",
                          model="intfloat/multilingual-e5-large-instruct"),
}
# Output size of the embedding models mem0's docs name (the openai embedder needs it up front).
MODEL_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536,
              "nomic-embed-text": 768, "mxbai-embed-large": 1024, "all-minilm": 384,
              "intfloat/multilingual-e5-large-instruct": 1024,
              "nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.f16.gguf": 768}
# Names of the model memstore bundles (sentence-transformers, fastembed and Hugging Face spellings).
BUNDLED_MODELS = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2",
                            "qdrant/all-minilm-l6-v2-onnx", "xenova/all-minilm-l6-v2"})
_EMBED_REFUSED = {
    "gemini": "use Gemini's OpenAI-compatible endpoint: {\"embedder\": {\"provider\": \"openai\", \"config\": "
              "{\"openai_base_url\": \"https://generativelanguage.googleapis.com/v1beta/openai/\", \"model\": "
              "\"text-embedding-004\", \"embedding_dims\": 768}}}",
    "vertexai": "serve the model behind an OpenAI-compatible /embeddings endpoint and use provider \"openai\" "
                "with openai_base_url and embedding_dims",
    "aws_bedrock": "use an OpenAI-compatible gateway (e.g. a LiteLLM proxy) with provider \"openai\", "
                   "openai_base_url and embedding_dims",
    "langchain": "point provider \"openai\" at an OpenAI-compatible /embeddings endpoint",
}
_EMBED_KEYS = frozenset({"model", "api_key", "embedding_dims", "azure_kwargs", "huggingface_base_url"})
_EMBED_IGNORED = frozenset({"http_client_proxies", "model_kwargs", "memory_add_embedding_type",
                            "memory_update_embedding_type", "memory_search_embedding_type",
                            "output_dimensionality", "vertex_credentials_json", "aws_access_key_id",
                            "aws_secret_access_key", "aws_session_token", "aws_region", "default_headers"})
_RERANK_REFUSED = ("cohere", "sentence_transformer", "huggingface", "zero_entropy")
_RERANK_KEYS = frozenset({"provider", "model", "api_key", "temperature", "llm", "scoring_prompt"})
_RERANK_IGNORED = frozenset({"top_k", "max_tokens"})


@dataclass
class Mem0Sources:
    """Where the mem0 store this config describes keeps its data (what `import_mem0()` reads).
    `qdrant_path` is None when the vector store is not a local Qdrant folder (a server, or
    another store): the import reads only Qdrant's local mode."""

    qdrant_path: str | None = MEM0_QDRANT_PATH
    collection: str = MEM0_COLLECTION
    history_db_path: str | None = MEM0_HISTORY
    vector_store: str = "qdrant"
    configured: bool = False          # False: mem0's defaults (the config named no vector store)
    configured_history: bool = False  # the config named history_db_path (it must then exist)


@dataclass
class Mem0Mapping:
    """What a mem0 config became: memstore's config, an LLM reranker's settings (or None), where
    the old data is, and what was ignored (each with its reason)."""

    config: MemoryConfig
    sources: Mem0Sources
    reranker: LLMConfig | None = None
    scoring_prompt: str | None = None
    custom_instructions: str | None = None    # add()'s prompt when the call gives none (as mem0)
    ignored: list[str] = field(default_factory=list)

    def warning(self) -> str | None:
        """The ONE warning text (None when nothing was ignored)."""
        if not self.ignored:
            return None
        return ("mem0 config: memstore ignored " + "; ".join(self.ignored) +
                ". memstore keeps memories, history and entity links in its one DuckDB file "
                f"({self.config.path}); `memstore import-mem0` reads the old mem0 data from the places named above.")


def is_mem0_config(data: Any) -> bool:
    """Is this dict in mem0's shape (rather than memstore's)?

    >>> is_mem0_config({"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}}})
    True
    >>> is_mem0_config({"llm": {"provider": "openai", "model": "gpt-4o-mini"}, "path": "x.duckdb"})
    False
    """
    if not isinstance(data, Mapping):
        return False
    if MEM0_ONLY_KEYS & set(data):
        return True
    return any(isinstance(data.get(k), Mapping) and _mem0_section(data[k], k) for k in ("llm", "embedder"))


# memstore's own provider names (config.py): a bare {"provider": ...} with one of these is memstore's
_OURS = {"llm": ("heuristic", "openai"), "embedder": ("local", "static", "openai", "hashing")}


def _mem0_section(section: Mapping[str, Any], name: str) -> bool:
    """mem0's shape: {"provider": ..., "config": {...}}, or a bare provider only mem0 has."""
    if "config" in section:
        return True
    return set(section) <= {"provider"} and section.get("provider") not in _OURS[name]


def map_mem0_config(data: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Mem0Mapping:
    """Read a mem0 config dict (see the module doc). `env`: the environment to read API keys and
    base URLs from, as mem0 does (default os.environ)."""
    env = os.environ if env is None else env
    if not isinstance(data, Mapping):
        raise ConfigError(f"a mem0 config must be a dict, got {type(data).__name__}")
    ours: dict[str, Any] = {}
    ignored: list[str] = []
    sources = Mem0Sources()
    reranker: LLMConfig | None = None
    scoring_prompt = custom = None
    for key, value in data.items():
        if key in ("llm", "embedder") and isinstance(value, Mapping) and _mem0_section(value, key):
            ours[key] = (_map_llm(value, env, ignored, key) if key == "llm" else _map_embedder(value, env, ignored))
        elif key == "reranker":
            if value is not None:
                reranker, scoring_prompt = _map_reranker(value, env, ignored)
        elif key == "vector_store":
            sources = _read_vector_store(value, sources)
            ignored.append(f"vector_store ({sources.vector_store}: memstore stores vectors in its own file)")
        elif key == "graph_store":
            if value:
                ignored.append("graph_store (memstore links entities itself, in its own file)")
        elif key == "history_db_path":
            if not isinstance(value, str) or not value:
                raise ConfigError("config key 'history_db_path' must be a path string", key=key)
            sources.history_db_path, sources.configured_history = value, True
            ignored.append("history_db_path (memstore keeps history in its own file)")
        elif key == "custom_instructions":
            if value is not None and not isinstance(value, str):
                raise ConfigError("config key 'custom_instructions' must be a string", key=key)
            custom = value or None
        elif key == "version":
            continue                      # mem0's output format version: memstore has one format
        else:
            ours[key] = value             # memstore's own keys; MemoryConfig names an unknown one
    config = MemoryConfig.from_dict(ours)
    return Mem0Mapping(config=config, sources=sources, reranker=reranker, scoring_prompt=scoring_prompt,
                       custom_instructions=custom, ignored=ignored)


def _section(value: Any, name: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"mem0 config section {name!r} must be a dict, got {type(value).__name__}", key=name)
    extra = sorted(set(value) - {"provider", "config"})
    if extra:
        raise ConfigError(f"unknown config key {name + '.' + extra[0]!r}",
                          hint="a mem0 section is {\"provider\": ..., \"config\": {...}}", key=f"{name}.{extra[0]}")
    provider = value.get("provider", "openai")
    conf = value.get("config") or {}
    if not isinstance(provider, str) or not isinstance(conf, Mapping):
        raise ConfigError(f"mem0 config section {name!r} needs a provider string and a config dict", key=name)
    return provider, dict(conf)


def _check_keys(conf: dict[str, Any], known: frozenset[str], ignorable: frozenset[str], provider_keys: set[str], where: str,
                ignored: list[str]) -> None:
    unknown = sorted(k for k in conf if k not in known | ignorable | provider_keys)
    if unknown:
        raise ConfigError(f"unknown config key {where + '.' + unknown[0]!r}",
                          hint=f"memstore reads {', '.join(sorted(known | provider_keys))} here",
                          key=f"{where}.{unknown[0]}")
    dropped = sorted(k for k in conf if k in ignorable and conf[k] not in (None, {}, ""))
    if dropped:
        ignored.append(f"{', '.join(f'{where}.{k}' for k in dropped)} (not used by memstore's client)")


def _azure(conf: dict[str, Any], env: Mapping[str, str], prefix: str, where: str) -> tuple[str, str | None, str | None]:
    """(base_url, api_key, deployment) of Azure OpenAI's v1 API (the plain OpenAI client works there)."""
    az = conf.get("azure_kwargs") or {}
    if not isinstance(az, Mapping):
        raise ConfigError(f"config key '{where}.azure_kwargs' must be a dict", key=f"{where}.azure_kwargs")
    endpoint = az.get("azure_endpoint") or env.get(f"{prefix}_AZURE_ENDPOINT")
    if not endpoint:
        raise ConfigError(f"azure_openai needs azure_kwargs.azure_endpoint (or ${prefix}_AZURE_ENDPOINT)",
                          hint="e.g. \"https://my-resource.openai.azure.com\"", key=f"{where}.azure_kwargs")
    key = az.get("api_key") or env.get(f"{prefix}_AZURE_OPENAI_API_KEY")
    deployment = az.get("azure_deployment") or env.get(f"{prefix}_AZURE_DEPLOYMENT")
    return endpoint.rstrip("/") + "/openai/v1/", key, deployment


def _endpoint(p: _Provider, conf: dict[str, Any], env: Mapping[str, str]) -> tuple[str | None, str | None]:
    base = (conf.get(p.base_key) if p.base_key else None) or (env.get(p.base_env) if p.base_env else None) \
        or p.base_default
    if base and p.suffix and not base.rstrip("/").endswith(p.suffix):
        base = base.rstrip("/") + p.suffix
    key = conf.get("api_key") or (env.get(p.key_env) if p.key_env else None) or p.key_default
    return base, key


def _map_llm(value: Any, env: Mapping[str, str], ignored: list[str], where: str = "llm") -> LLMConfig:
    provider, conf = _section(value, where)
    cfg = LLMConfig(provider="openai")
    if provider in AZURE:
        _check_keys(conf, _LLM_KEYS, _LLM_IGNORED, set(), f"{where}.config", ignored)
        cfg.base_url, cfg.api_key, deployment = _azure(conf, env, "LLM", f"{where}.config")
        cfg.model = deployment or conf.get("model") or cfg.model
    elif provider in LLM_PROVIDERS:
        p = LLM_PROVIDERS[provider]
        _check_keys(conf, _LLM_KEYS, _LLM_IGNORED, {p.base_key} if p.base_key else set(), f"{where}.config", ignored)
        cfg.base_url, cfg.api_key = _endpoint(p, conf, env)
        if provider.startswith("openai") and env.get("OPENROUTER_API_KEY"):      # mem0 switches to OpenRouter
            cfg.api_key = env["OPENROUTER_API_KEY"]
            cfg.base_url = conf.get("openrouter_base_url") or env.get("OPENROUTER_API_BASE") \
                or "https://openrouter.ai/api/v1"
        cfg.model = conf.get("model") or p.model or cfg.model
        cfg.json_mode = p.json_mode
    else:
        raise _refused("llm", provider, _LLM_REFUSED, LLM_PROVIDERS, AZURE)
    if conf.get("temperature") is not None:
        t = conf["temperature"]
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise ConfigError(f"config key '{where}.config.temperature' is {t!r}", hint="give a number, e.g. 0.1",
                              key=f"{where}.config.temperature")
        cfg.temperature = float(t)
    cfg.vision = bool(conf.get("enable_vision", False))
    if conf.get("vision_details"):
        cfg.vision_detail = conf["vision_details"]
    return _checked(LLMConfig, cfg, where)


def _map_embedder(value: Any, env: Mapping[str, str], ignored: list[str]) -> EmbedderConfig:
    provider, conf = _section(value, "embedder")
    where = "embedder.config"
    model = conf.get("model")
    dims = conf.get("embedding_dims")
    if provider in ("huggingface", "fastembed") and not conf.get("huggingface_base_url"):
        _check_keys(conf, _EMBED_KEYS, _EMBED_IGNORED, set(), where, ignored)
        model = model or ("multi-qa-MiniLM-L6-cos-v1" if provider == "huggingface" else "thenlper/gte-large")
        if str(model).lower() not in BUNDLED_MODELS:
            raise ConfigError(f"mem0 embedder {provider!r} with model {model!r}: memstore runs only its bundled "
                              "all-MiniLM-L6-v2 in process", key=f"{where}.model",
                              hint="use model \"sentence-transformers/all-MiniLM-L6-v2\" (memstore's bundled ONNX "
                                   "copy of it), or serve your model with an OpenAI-compatible /embeddings server "
                                   "(Hugging Face TEI) and set huggingface_base_url and embedding_dims")
        if dims not in (None, 384):
            raise ConfigError(f"config key '{where}.embedding_dims' is {dims!r}; all-MiniLM-L6-v2 gives 384",
                              key=f"{where}.embedding_dims")
        return EmbedderConfig(provider="local")
    cfg = EmbedderConfig(provider="openai")
    if provider in AZURE:
        _check_keys(conf, _EMBED_KEYS, _EMBED_IGNORED, set(), where, ignored)
        cfg.base_url, cfg.api_key, deployment = _azure(conf, env, "EMBEDDING", where)
        model = deployment or model or "text-embedding-3-small"
    elif provider == "huggingface":
        _check_keys(conf, _EMBED_KEYS, _EMBED_IGNORED, set(), where, ignored)
        cfg.base_url = conf["huggingface_base_url"]
        cfg.api_key = conf.get("api_key") or env.get("HUGGINGFACE_API_KEY") or "hf"
        model = model or "tei"
    elif provider in EMBED_PROVIDERS:
        p = EMBED_PROVIDERS[provider]
        _check_keys(conf, _EMBED_KEYS, _EMBED_IGNORED, {p.base_key} if p.base_key else set(), where, ignored)
        cfg.base_url, cfg.api_key = _endpoint(p, conf, env)
        if provider == "openai" and not conf.get("openai_base_url"):
            cfg.base_url = env.get("OPENAI_API_BASE") or env.get("OPENAI_BASE_URL")
        model = model or p.model
    else:
        raise _refused("embedder", provider, _EMBED_REFUSED, EMBED_PROVIDERS, (*AZURE, "huggingface", "fastembed"))
    cfg.model = str(model)
    cfg.dims = dims or MODEL_DIMS.get(cfg.model)
    if cfg.dims is None:
        raise ConfigError(f"mem0 embedder {provider!r}: memstore needs the output size of model {model!r}",
                          hint="set embedder.config.embedding_dims", key=f"{where}.embedding_dims")
    return _checked(EmbedderConfig, cfg, "embedder")


def _map_reranker(value: Any, env: Mapping[str, str], ignored: list[str]) -> tuple[LLMConfig, str | None]:
    provider, conf = _section(value, "reranker")
    where = "reranker.config"
    if provider != "llm":
        hint = ("use {\"reranker\": {\"provider\": \"llm\", \"config\": {\"model\": ..., \"llm\": {\"provider\": "
                "\"openai\", \"config\": {\"openai_base_url\": ...}}}}} (an OpenAI-compatible model scores each "
                "result), or set memory.reranker = fn(query, results) -> scores; search(..., rerank=True) uses it")
        what = "is not one memstore can run" if provider in _RERANK_REFUSED else "is unknown"
        raise ConfigError(f"mem0 reranker provider {provider!r} {what}", hint=hint, key="reranker.provider")
    _check_keys(conf, _RERANK_KEYS, _RERANK_IGNORED, set(), where, ignored)
    nested = conf.get("llm")
    if nested:
        section = {"provider": nested.get("provider", conf.get("provider", "openai")),
                   "config": {**{k: conf[k] for k in ("model", "api_key", "temperature") if conf.get(k) is not None},
                              **(nested.get("config") or {})}}
    else:
        section = {"provider": conf.get("provider", "openai"),
                   "config": {k: conf[k] for k in ("model", "api_key", "temperature") if conf.get(k) is not None}}
    cfg = _map_llm(section, env, ignored, where="reranker.config.llm")
    return cfg, conf.get("scoring_prompt")


def _refused(kind: str, provider: str, refused: dict[str, str], served: Mapping[str, Any], extra: tuple[Any, ...]) -> ConfigError:
    if provider in refused:
        return ConfigError(f"mem0 {kind} provider {provider!r} is not one memstore can call (memstore talks to "
                           f"OpenAI-compatible endpoints)", hint=refused[provider], key=f"{kind}.provider")
    return ConfigError(f"unknown mem0 {kind} provider {provider!r}", key=f"{kind}.provider",
                       hint=f"memstore maps {', '.join(sorted([*served, *extra]))}")


def _checked(cls: type[_T], obj: Any, where: str) -> _T:
    """Run memstore's own checks on a mapped section (vision_detail, ...)."""
    section = "llm" if cls is LLMConfig else "embedder"
    checked: _T = getattr(MemoryConfig.from_dict({section: dataclasses.asdict(obj)}), section)
    return checked


def _read_vector_store(value: Any, sources: Mem0Sources) -> Mem0Sources:
    """Where a mem0 vector_store section keeps its data: a Qdrant local folder and collection."""
    provider, conf = _section(value, "vector_store")
    out = Mem0Sources(qdrant_path=None, collection=conf.get("collection_name") or MEM0_COLLECTION,
                      history_db_path=sources.history_db_path, vector_store=provider, configured=True,
                      configured_history=sources.configured_history)
    if provider == "qdrant" and not (conf.get("host") or conf.get("url") or conf.get("client")):
        out.qdrant_path = conf.get("path") or MEM0_QDRANT_PATH
    return out


def from_mem0_or_ours(config: Any) -> tuple[MemoryConfig, Mem0Mapping | None]:
    """The MemoryConfig for `Memory(config=...)`: a MemoryConfig as is, memstore's dict read, or
    mem0's dict mapped (then with its mapping, after ONE Mem0ConfigWarning if anything was ignored)."""
    import warnings

    if isinstance(config, MemoryConfig):
        return config, None
    if is_mem0_config(config):
        mapping = map_mem0_config(config)
        text = mapping.warning()
        if text:
            warnings.warn(text, Mem0ConfigWarning, stacklevel=3)
        return mapping.config, mapping
    return MemoryConfig.from_dict(config or {}), None
