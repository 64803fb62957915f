"""The domain model: what an add carries from the messages to the stored rows.

`AddState` is one add in flight; `prepare` (memstore/pipeline/add.py) fills it without writing
anything and returns it as a `PreparedAdd` — plain data (dataclasses, lists, NumPy arrays) that
pickles, so it can be prepared in one process and committed in another; `commit` writes it.

>>> import pickle
>>> from memstore.core.identity import Scope
>>> st = AddState(scope=Scope(user_id="ann"), messages=[Message("user", "I live in Oslo")], metadata={}, infer=True)
>>> pickle.loads(pickle.dumps(st)).messages[0].content
'I live in Oslo'
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memstore.core.identity import Scope
from memstore.core.timeutil import utcnow

# Roles whose messages are context for the extractor, never facts stated by a person: tool and
# function results (OpenAI chat format). See memstore/pipeline/message_shapes.py.
CONTEXT_ONLY_ROLES = frozenset({"tool", "function"})


@dataclass
class Message:
    """One chat message as given to `add` (or read from an export). `parts` keeps the content
    parts of a message that held images ("text", str) / ("image", url, detail), so that they can
    be described once the LLM is known (message_shapes.describe_images)."""

    role: str
    content: str
    name: str | None = None
    created_at: dt.datetime | None = None
    id: str | None = None
    source_file: str | None = None
    source_conversation: str | None = None
    source_message_id: str | None = None
    parts: tuple[tuple[str, ...], ...] | None = None

    @property
    def context_only(self) -> bool:
        """A tool result: context for the extractor, not something the user (or anyone) said."""
        return self.role in CONTEXT_ONLY_ROLES


@dataclass
class ContextMemory:
    """A stored memory shown to the extractor under a short id (m1, m2, ...)."""

    short_id: str
    id: str
    memory: str
    slot: str | None = None


@dataclass
class ImportedEvent:
    """One history event an imported memory brings with it (mem0's history.db)."""

    event: str                               # ADD | UPDATE | DELETE ...
    old_memory: str | None
    new_memory: str | None
    created_at: dt.datetime
    actor_id: str | None = None
    role: str = "user"


@dataclass
class ImportedRecord:
    """What an imported memory keeps of its own record (the mem0 import), instead of what the add
    that stores it would give it: metadata, times, actor and its history."""

    metadata: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    actor_id: str | None
    history: list[ImportedEvent] = field(default_factory=list)


@dataclass
class Fact:
    """One fact returned by an extractor, and what the pipeline did with it."""

    text: str
    attributed_to: str | None = None
    linked_ids: list[str] = field(default_factory=list)      # real memory ids (mapped from short ids)
    supersedes: list[str] = field(default_factory=list)      # real memory ids this fact replaces
    slot: str | None = None                                   # e.g. "lives_in" (truth maintenance)
    subject: str | None = None                                # whose slot, e.g. "alice"
    slot_value: str | None = None                             # e.g. "seattle"; None when the fact ends the slot
    slot_additive: bool = False                               # "also works at ...": adds a value, replaces none
    slot_checked: bool = False                                # the slot fields above were read from the text
    superseded_by: tuple[str, Any] | None = None              # (id, valid_from) of a stored newer fact on the slot
    narrows: list[str] = field(default_factory=list)          # closed facts whose interval this late fact cuts
    source_message_ids: list[str] = field(default_factory=list)
    role: str | None = None
    valid_from: dt.datetime | None = None
    kind: str | None = None                                   # state | event | transient (offline extractor)
    imported: ImportedRecord | None = None                    # an imported memory's own record (mem0 import)
    expires_at: dt.datetime | None = None                     # a transient state's end ("this week")
    verbatim: bool = False                                    # a message (or a piece of one) kept as written
    # filled by later steps
    id: str | None = None
    hash: str | None = None
    embedding: np.ndarray | None = None
    outcome: str = "pending"                                  # added | duplicate | duplicate_in_batch
    duplicate_of: str | None = None
    entities: list[Any] = field(default_factory=list)
    terms: dict[str, int] = field(default_factory=dict)

    @property
    def stored_id(self) -> str:
        """The id of a fact being stored (the pipeline gives every added fact one before the write)."""
        if self.id is None:
            raise ValueError(f"fact {self.text[:60]!r} reached the store without an id (the pipeline assigns one)")
        return self.id


@dataclass
class Extraction:
    """What one extractor call produced."""

    status: str                     # ok | empty | malformed | llm_error
    facts: list[Fact]
    extractor: str                  # llm | heuristic | none
    model: str | None = None
    prompt_version: str | None = None
    error: str | None = None
    raw: str | None = None
    latency_ms: float = 0.0


@dataclass
class AddOptions:
    """What differs between the callers of one pipeline, carried by each add (not by a copied runtime).

    add() and the server use the defaults; ingest attaches each batch's own conversation as context,
    keeps every message (its memories cite them) and, for LLM facts, supersedes by slot.
    """

    gather_context: bool = True             # False: the caller attached context_messages itself
    keep_all_messages: bool = False         # True: no pruning to config `messages_kept`
    slot_supersession: str | None = None    # overrides config `slot_supersession` for this add
    request_limits: bool = True             # config `limits` apply (an add; ingest and imports read files whole)
    max_message_chars: int | None = None    # overrides config `limits.max_message_chars` (ingest's own limit)


@dataclass
class AddState:
    """Everything one `add` call knows; each step reads and extends it."""

    scope: Scope
    messages: list[Message]
    metadata: dict[str, Any]
    infer: bool
    options: AddOptions = field(default_factory=AddOptions)
    actor_id: str | None = None
    timestamp: dt.datetime | None = None
    expiration_date: dt.datetime | None = None
    prompt: str | None = None
    memory_type: str | None = None            # "procedural_memory": one summary of an agent's run
    now: dt.datetime = field(default_factory=lambda: utcnow())
    context_messages: list[Message] = field(default_factory=list)
    context_memories: list[ContextMemory] = field(default_factory=list)
    extraction: Extraction | None = None
    extraction_run_id: str | None = None      # the id of this add's extraction_runs row
    facts: list[Fact] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)      # table name -> pyarrow.Table to insert
    extra_rows: dict[str, Any] = field(default_factory=dict)  # more rows committed with this add (ingest_log)
    embedded_with: str | None = None          # the embedder that made the facts' vectors (a re-embedding checks it)
    results: list[dict[str, Any]] = field(default_factory=list)


PreparedAdd = AddState
"""An `AddState` whose prepare steps have run (validated, extracted, analysed, embedded): nothing
of it is stored yet, and it holds no connection, lock or model — only data."""
