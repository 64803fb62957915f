"""The add pipeline as named stages, for a process that runs only part of it.

`Memory.add()` runs every stage in one process. `memstore serve --fronts N` splits them: a front
process (no store) reads the request, extracts and runs the models; the owner (the one process
with the store file) reads the LLM's context from the store and commits. Each side asks for its
stages here by name instead of composing pipeline steps itself:

    stage      where            what                                              pipeline steps
    read       front or owner   check the messages, options and identity          validate_input
    context    owner            the LLM's context: recent messages and memories   gather_context
               (front: offline, no store needed)
    extract    front            the ONE extractor call (LLM or offline)            extract_facts
    models     front            spaCy and the embedder, many adds at once          analyze_facts, embed_facts
    commit     owner            dedupe, supersede, rows, one transaction           Memory.commit_prepared
    failed     owner            record an LLM call that failed, as add() does      (extraction_runs row)

`AddStages(runtime)` binds them to a runtime: `Memory.stages` for the owner's (its store),
`AddStages.for_models(config)` for a front's (models only, no store). Errors cross processes as
`pack_error` / `unpack_error` (their class and fields).

>>> from memstore.core.config import MemoryConfig
>>> from memstore.memory import add_state
>>> stages = AddStages.for_models(MemoryConfig.from_dict({"embedder": {"provider": "hashing"}}))
>>> st = stages.context(stages.read(add_state("I live in Lisbon", user_id="ana")))
>>> [f.text for f in stages.models([stages.extract(st)])[0].facts]
['Ana lives in Lisbon']
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstore.core.config import MemoryConfig
from memstore.core.errors import LLMError
from memstore.core.model import AddState, PreparedAdd
from memstore.pipeline.add import EXTRACT_STEPS, prepare_text, record_failed_run
from memstore.pipeline.gather_context import gather_context
from memstore.pipeline.validate_input import validate_input
from memstore.pipeline.workers import BatchDocs, model_runtime, pack_error, prepare_batch, unpack_error
from memstore.runtime import Runtime

__all__ = ["AddStages", "pack_error", "unpack_error"]


class AddStages:
    """The add's stages on one runtime (see the module docstring for the table)."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._docs: BatchDocs | None = None

    @classmethod
    def for_models(cls, config: MemoryConfig | dict[str, Any]) -> AddStages:
        """Stages for a process with models and no store (a server's front, a batch worker)."""
        return cls(model_runtime(MemoryConfig.from_dict(config) if isinstance(config, dict) else config))

    @property
    def config(self) -> MemoryConfig:
        return self._rt.config

    @property
    def nlp(self) -> Any:
        """The runtime's spaCy pipeline (a front's snapshot search analyses the query with it)."""
        return self._rt.nlp

    @property
    def offline(self) -> bool:
        """Is the extractor the offline one (it reads no context and extracts inside a model batch)?"""
        return self._rt.config.llm.provider == "heuristic"

    @property
    def context_needs_store(self) -> bool:
        """Does the context stage read the store (an LLM extractor given recent messages or memories)?"""
        cfg = self._rt.config
        return not self.offline and (cfg.context_messages > 0 or cfg.context_memories > 0)

    def read(self, state: AddState) -> AddState:
        """Check the messages, options and identity (InputError names what is wrong)."""
        return prepare_text(state, self._rt, steps=(validate_input,))

    def context(self, state: AddState) -> AddState:
        """Attach the LLM's context (nothing to read for the offline extractor)."""
        return prepare_text(state, self._rt, steps=(gather_context,))

    def extract(self, state: AddState) -> AddState:
        """The ONE extractor call. A failed LLM call raises and is not recorded here: the owner's
        `failed` stage records it."""
        return prepare_text(state, self._rt, record_failure=False, steps=EXTRACT_STEPS)

    def models(self, states: Sequence[AddState], *, extract: bool = False) -> list[PreparedAdd | BaseException]:
        """spaCy and the embedder once for many adds (and, with `extract=True`, the offline
        extractor's sentences in the same spaCy pass); per add, the prepared add or its error."""
        if self._docs is None:
            self._docs = BatchDocs(self._rt)
        return prepare_batch(list(states), self._rt, extract=extract, docs=self._docs)

    @property
    def batch_extracts(self) -> bool:
        """Does `models(extract=True)` extract too (the offline extractor parses in the batch)?"""
        if self._docs is None:
            self._docs = BatchDocs(self._rt)
        return self._docs.extractor is not None

    def failed(self, state: AddState, error: LLMError) -> None:
        """Record an LLM call that failed, as add() does (needs the store)."""
        record_failed_run(state, self._rt, error)

    def embed_query(self, query: str) -> Any:
        """The query's vector, as search computes it."""
        return self._rt.embed_query(query)
