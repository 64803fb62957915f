"""LoCoMo-style conversations: samples whose `conversation` holds `session_N` turn lists and
`session_N_date_time` strings ("1:56 pm on 8 May, 2023").

Each session is one conversation (id `SAMPLE/session_N`, message ids the `dia_id`s). Both speakers
are people, so every turn is a user message carrying the speaker's name: facts are attributed to
whoever said them. A shared image's caption is kept as text. Turns of one session are one second
apart so their order survives.

>>> sample = {"sample_id": "s1", "conversation": {"speaker_a": "Carol", "speaker_b": "Dave",
...   "session_1_date_time": "1:56 pm on 8 May, 2023",
...   "session_1": [{"speaker": "Carol", "dia_id": "D1:1", "text": "I moved to Boulder."},
...                 {"speaker": "Dave", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a puppy"}]}}
>>> [(m.name, m.content, str(m.created_at)) for c in parse_sample(sample, "x.json", []) for m in c.messages]
[('Carol', 'I moved to Boulder.', '2023-05-08 13:56:00'), ('Dave', 'Look! [shares an image: a puppy]', '2023-05-08 13:56:01')]
"""
from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from typing import Any

from memstore.core.timeutil import TimeParseError, parse_time
from memstore.ingest.jsonstream import iter_items
from memstore.ingest.sources import open_bytes
from memstore.ingest.types import (
    DEFAULT_MAX_MESSAGE_CHARS,
    Problem,
    SourceConversation,
    clean_message,
)

FORMAT = "locomo"
_SESSION = re.compile(r"^session_(\d+)$")


def read_locomo(path: str | os.PathLike, problems: list[Problem], *,
                max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS, **_: Any) -> Iterator[SourceConversation]:
    """Yield each session of each sample (a file holds one sample object or a list of them)."""
    file = os.fspath(path)
    with open_bytes(file, wanted=(os.path.basename(file),)) as stream:
        one = stream.peek(64).lstrip()[:1] == b"{"
        samples = iter_items(stream, file, what="sample", prefix="" if one else "item")
        for n, sample in enumerate(samples):
            yield from parse_sample(sample, file, problems, index=n, max_message_chars=max_message_chars)


def parse_sample(sample: Any, file: str, problems: list[Problem], *, index: int = 0,
                 max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> Iterator[SourceConversation]:
    """The sessions of one LoCoMo sample as conversations, oldest first."""
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        problems.append(Problem(file, f"sample #{index + 1} has no 'conversation' object"))
        return
    sid = str(sample.get("sample_id") or f"sample{index + 1}")
    conv = sample["conversation"]
    sessions = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION.match(k)))
    for num, key in sessions:
        cid = f"{sid}/{key}"
        turns = conv[key]
        out = SourceConversation(file=file, format=FORMAT, id=cid, title=f"{sid} session {num}", messages=[])
        start = _session_time(conv.get(f"{key}_date_time"))
        if start is None:
            problems.append(Problem(file, f"no readable {key}_date_time: messages get the ingest time",
                                    conversation=cid, severity="warning"))
        if not isinstance(turns, list):
            problems.append(Problem(file, f"{key} is {type(turns).__name__}, not a list of turns", conversation=cid))
            continue
        for n, turn in enumerate(turns):
            out.n_read += 1
            if not isinstance(turn, dict):
                problems.append(Problem(file, f"turn #{n + 1} is not an object", conversation=cid,
                                        message=f"#{n + 1}"))
                continue
            mid = str(turn.get("dia_id") or f"#{n + 1}")
            text = turn.get("text")
            if isinstance(text, str) and isinstance(turn.get("blip_caption"), str):
                text = f"{text} [shares an image: {turn['blip_caption']}]"
            speaker = turn.get("speaker")
            m, problem = clean_message("user", text, file=file, conversation=cid, message=mid,
                                       name=str(speaker) if speaker else None,
                                       created_at=start + dt.timedelta(seconds=n) if start else None,
                                       max_chars=max_message_chars)
            if problem:
                problems.append(problem)
            if m is not None:
                out.messages.append(m)
        yield out


def _session_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value, "session date_time")
    except (TimeParseError, ValueError):
        return None

