"""One entry point over every reader: `read_source(path, format, problems, ...)`.

>>> sorted(READERS)
['chatgpt', 'claude', 'csv', 'jsonl', 'locomo', 'parquet']
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

from memstore.ingest.chatgpt import read_chatgpt
from memstore.ingest.claude import read_claude
from memstore.ingest.locomo import read_locomo
from memstore.ingest.tabular import read_tabular
from memstore.ingest.types import Problem, SourceConversation

READERS: dict[str, Callable[..., Iterator[SourceConversation]]] = {
    "chatgpt": read_chatgpt, "claude": read_claude, "locomo": read_locomo,
    "jsonl": functools.partial(read_tabular, format="jsonl"),
    "csv": functools.partial(read_tabular, format="csv"),
    "parquet": functools.partial(read_tabular, format="parquet"),
}


def read_source(path: str | os.PathLike, fmt: str, problems: list[Problem], **options: Any) -> Iterator[SourceConversation]:
    """Conversations of `path` read as `fmt`; problems are appended to `problems` as they are met."""
    return READERS[fmt](path, problems, **options)
