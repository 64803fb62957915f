"""How an ingest plans a conversation, whoever runs the plan: the one-machine runner
(memstore/ingest/runner.py) and the Ray driver (memstore/ray/ingest.py) call the same functions, so
both store the same messages, cut them into the same adds and commit them in the same order.

- `Stager.stage(conv, known)`: which messages of a conversation are new (not in `ingest_log`, not
  repeated within the run), their stored ids (`message_id`: a UUID5 of scope, format, conversation
  and message key, so a re-run or another machine names them alike) and the conversation's sort
  key (its first new message's time; oldest first: truth maintenance needs it).
- `conversation_states`: the adds of a conversation (`split_batches`), each with the messages of
  its conversation before it as context.
- `log_rows` / `account`: the `ingest_log` rows committed with a conversation, and what it adds to
  the report.

>>> from memstore.core.identity import Scope
>>> message_id(Scope(user_id="ana").key, "jsonl", "c1", "m1") == message_id(Scope(user_id="ana").key, "jsonl", "c1", "m1")
True
"""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from memstore.core.identity import Scope
from memstore.core.ids import new_id
from memstore.core.model import AddOptions, AddState, Message
from memstore.ingest.batching import split_batches
from memstore.ingest.report import IngestReport
from memstore.ingest.types import Problem, SourceConversation
from memstore.store.rows import ingest_log_rows

NAMESPACE = uuid.UUID("5b0f3c4e-6a53-4b47-9d0e-3f1c9a7e2d10")


def message_id(scope_key: str, fmt: str, conversation: str, key: str) -> str:
    """The stored id of a source message: the same on every run and every machine."""
    return str(uuid.uuid5(NAMESPACE, f"{scope_key}\x1f{fmt}\x1f{conversation}\x1f{key}"))


@dataclass
class Staged:
    """A conversation with new messages: its sort key and which of its messages are new."""

    when: dt.datetime
    seq: int
    fresh: list[bool]
    keys: list[str]                      # message_key of each NEW message, in order

    @property
    def n_new(self) -> int:
        return len(self.keys)


class Stager:
    """Counts what is read into `report` and decides, conversation by conversation, what is new."""

    def __init__(self, scope: Scope, report: IngestReport) -> None:
        self.scope = scope
        self.report = report
        self.seen: set[int] = set()
        self.last_when = dt.datetime.min
        self.seq = 0

    def stage(self, conv: SourceConversation, known: set[tuple[str, str]]) -> Staged | None:
        """`conv`'s new messages (their ids set), or None when it has none (counted why)."""
        r = self.report
        r.conversations["read"] += 1
        r.messages["read"] += conv.n_read
        if not conv.messages:
            r.conversations["empty"] += 1
            r.note(Problem(conv.file, "empty conversation (no chat text)", conversation=conv.id, severity="warning"))
            return None
        fresh: list[bool] = []
        keys: list[str] = []
        for m in conv.messages:
            key = m.source_message_id or ""
            token = hash((conv.format, conv.id, key))
            if (conv.id, key) in known:
                r.messages["already_ingested"] += 1
                fresh.append(False)
            elif token in self.seen:
                r.note(Problem(conv.file, "repeated message (same conversation and message id)",
                               conversation=conv.id, message=key))
                fresh.append(False)
            else:
                self.seen.add(token)
                fresh.append(True)
                keys.append(key)
            m.id = message_id(self.scope.key, conv.format, conv.id, key)
        if not keys:   # all stored before, or all repeats of messages read earlier in this run
            r.conversations["already_ingested" if any(not f for f in fresh) and known else "skipped"] += 1
            return None
        when = next((m.created_at for m, f in zip(conv.messages, fresh) if f and m.created_at), None)
        self.last_when = when or self.last_when
        self.seq += 1
        return Staged(when=self.last_when, seq=self.seq, fresh=fresh, keys=keys)


@dataclass
class ConversationJob:
    """One conversation's new messages, cut into adds, on their way to the commit."""

    format: str
    id: str
    file: str
    keys: list[str]
    states: list[AddState]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_new(self) -> int:
        return len(self.keys)


def conversation_states(conv: SourceConversation, fresh: list[bool], scope: Scope, *, batch_size: int,
                        metadata: dict[str, Any] | None, options: AddOptions, n_context: int,
                        now: dt.datetime) -> list[AddState]:
    """The adds of a conversation's new messages: evenly cut batches (`split_batches`), each with
    the messages of its conversation before it as context."""
    meta = dict(metadata or {})
    states: list[AddState] = []
    positions = [i for i, f in enumerate(fresh) if f]
    for part in split_batches(len(positions), batch_size):
        chunk = positions[part.start:part.stop]
        msgs = [conv.messages[i] for i in chunk]
        first = chunk[0]
        st = AddState(scope=scope, messages=msgs, metadata=meta, infer=True, options=options,
                      timestamp=next((m.created_at for m in reversed(msgs) if m.created_at), None))
        st.now = now
        st.extraction_run_id = new_id()        # ingest_log rows name it before the write
        st.context_messages = conv.messages[max(0, first - n_context):first] if n_context else []
        states.append(st)
    return states


def log_rows(scope: Scope, job: ConversationJob, *, ingest_id: str, now: dt.datetime) -> Any:
    """ingest_log rows of a conversation: each stored source message, its messages.id and its
    extraction run."""
    keys = iter(job.keys)
    return ingest_log_rows(scope, [(job.format, job.id, next(keys), m.id, st.extraction_run_id, job.file)
                                   for st in job.states for m in st.messages], ingest_id=ingest_id, now=now)


def account(report: IngestReport, job: ConversationJob) -> None:
    """A stored conversation's share of the report."""
    report.conversations["ingested"] += 1
    report.messages["stored"] += job.n_new
    for st in job.states:
        report.extraction_runs[st.extraction.status] += 1
        report.memories["added"] += sum(f.outcome == "added" for f in st.facts)
        report.memories["deduplicated"] += sum(f.outcome.startswith("duplicate") for f in st.facts)
        report.memories["superseded"] += sum(res.get("event") == "SUPERSEDE" for res in st.results)


def fail(report: IngestReport, job: ConversationJob, exc: BaseException | str, *, stage: str) -> None:
    """Record a conversation that could not be stored; a re-run tries it again."""
    report.conversations["failed"] += 1
    report.messages["failed"] += job.n_new
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    report.note(Problem(job.file, f"{stage} failed: {text}"[:1000], conversation=job.id, severity="failed"))


def conversation_messages(job: ConversationJob) -> list[Message]:
    """The new messages of a job, in order (aligned with `job.keys`)."""
    return [m for st in job.states for m in st.messages]
