"""A reranker for `Memory.search(rerank=True)` that asks an OpenAI-compatible LLM how relevant
each result is to the query (0.0-1.0; one call per result, as mem0's `llm` reranker does).

Built from a mem0 config's `reranker: {"provider": "llm", ...}` section (memstore/core/mem0_config.py),
or by hand: `m.reranker = LLMReranker(LLMConfig(provider="openai", base_url=..., model=...))`.

>>> parse_score("Score: 0.8"), parse_score("7"), parse_score("no idea")
(0.8, 1.0, 0.5)
"""
from __future__ import annotations

import re
from typing import Any

from memstore.core.config import LLMConfig

# mem0's LLMReranker._SYSTEM_PROMPT (mem0/reranker/llm_reranker.py), the same scale.
SYSTEM_PROMPT = ("You are a relevance scoring assistant. Given a query and a document, score how relevant the "
                 "document is to the query on a scale from 0.0 to 1.0: 1.0 perfectly relevant and directly "
                 "answers the query, 0.8-0.9 highly relevant, 0.6-0.7 moderately relevant, 0.4-0.5 slightly "
                 "relevant, 0.0-0.3 not relevant. Respond with only a single number between 0.0 and 1.0.")
MAX_INPUT = 4000       # characters of query and document sent (as mem0)


def parse_score(text: str) -> float:
    """The first number of the answer, clamped to [0, 1]; 0.5 when there is none (as mem0)."""
    found = re.findall(r"-?\d+\.\d+", text) or re.findall(r"-?\d+", text)
    return min(max(float(found[0]), 0.0), 1.0) if found else 0.5


class LLMReranker:
    """`reranker(query, results) -> scores`; an LLM error propagates (search keeps the fused order
    and warns)."""

    def __init__(self, cfg: LLMConfig, system_prompt: str | None = None) -> None:
        from memstore.extraction.factory import build_extractor

        self._llm = build_extractor(cfg, None)
        self.system_prompt = system_prompt or SYSTEM_PROMPT

    def __call__(self, query: str, results: list[dict[str, Any]]) -> list[float]:
        scores = []
        for r in results:
            chat = [{"role": "system", "content": self.system_prompt},
                    {"role": "user", "content": f"Query: {query[:MAX_INPUT]}\n\nDocument: "
                                                f"{str(r.get('memory', ''))[:MAX_INPUT]}"}]
            scores.append(parse_score(self._llm.complete(chat, purpose="rerank")))
        return scores
