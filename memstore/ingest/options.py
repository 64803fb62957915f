"""IngestOptions: the knobs of one ingest call, checked before any file is read.

>>> opts = IngestOptions(batch_size=10, mapping="role=author,content=text")
>>> opts.check(); opts.mapping["content"]
'text'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memstore.core.errors import ConfigError
from memstore.core.identity import check_metadata
from memstore.ingest.detect import check_format
from memstore.ingest.tabular import parse_mapping
from memstore.ingest.types import DEFAULT_MAX_MESSAGE_CHARS


@dataclass
class IngestOptions:
    """Knobs of one ingest call (see Memory.ingest)."""

    format: str = "auto"
    mapping: dict[str, str] | str | None = None
    batch_size: int = 20                 # messages per extraction call (a conversation is cut evenly)
    concurrency: int = 8                 # LLM calls in flight
    retries: int = 3                     # extra tries of a batch after a retryable LLM error
    backoff_s: float = 1.0               # first retry delay; doubles each time (with jitter)
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    commit_messages: int = 2000          # messages per write transaction (whole conversations)
    progress: bool | None = None         # None: a bar on an interactive terminal only
    metadata: dict[str, Any] | None = None

    def check(self) -> None:
        for name in ("batch_size", "concurrency", "commit_messages", "max_message_chars"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"ingest option {name} must be a positive integer, got {getattr(self, name)!r}",
                                  key=name)
        if self.retries < 0 or self.backoff_s < 0:
            raise ConfigError("ingest options retries and backoff_s must be >= 0", key="retries")
        check_format(self.format)
        self.mapping = parse_mapping(self.mapping)
        self.metadata = check_metadata(self.metadata)
