"""The fact extractor a config asks for."""
from __future__ import annotations

from typing import Any

from memstore.core.config import LLMConfig


def build_extractor(cfg: LLMConfig, nlp: Any) -> Any:
    """The fact extractor: the OpenAI-compatible LLM, or the offline heuristic fallback."""
    if cfg.provider == "openai":
        from memstore.extraction.extract_llm import LLMExtractor

        return LLMExtractor(model=cfg.model, base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout,
                            max_retries=cfg.max_retries, temperature=cfg.temperature, json_mode=cfg.json_mode,
                            deadline=cfg.deadline, max_facts=cfg.max_facts, max_fact_chars=cfg.max_fact_chars,
                            max_answer_bytes=cfg.max_answer_bytes)
    from memstore.extraction.extract_heuristic import HeuristicExtractor

    return HeuristicExtractor(nlp, sessions=cfg.working_sessions)
