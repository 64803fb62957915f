"""The demo store the dashboard opens when no store is named: the four demo chat exports of
`data/demo/` ingested offline, plus a small scope `sam` written through `add()` so every page has
something to show that the exports alone do not produce:

- an unresolved contradiction (two `lives_in` facts, written with slot supersession off, as an
  agent without truth maintenance would leave them),
- one expired memory and one that expires in a few days,
- LLM extraction runs through the real `openai` client against `ScriptedOpenAIServer`: one `ok`
  and one `malformed` answer (model name, latency and the error are recorded as with a real model).

`ensure_demo_store(path)` builds what is missing and is cheap when the store is complete (ingest
skips messages it already holds), so a partial store (e.g. from `scripts/demo.py`) is completed.

>>> [u for _, u, _ in DEMO_FILES]
['alice', 'bob', 'carol', 'erin']
"""
from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path

from memstore.core.config import DEFAULT_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO_ROOT / "data" / "demo"
# The one default store of library, CLI, dashboard and `make demo`: data/memstore.duckdb (relative
# to the working directory, as `Memory()` and the CLI open it).
DEFAULT_DEMO_STORE = Path(DEFAULT_PATH)
EXTRA_USER = "sam"

# (file under data/demo, user, ingest keyword arguments) — as listed in data/demo/README.md
DEMO_FILES: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("chatgpt/alice/conversations.json", "alice", {}),
    ("claude/bob/conversations.json", "bob", {}),
    ("locomo/carol_dave.json", "carol", {}),
    ("jsonl/erin/messages.jsonl", "erin",
     {"mapping": "role=author,content=text,ts=created,conversation=thread,id=msg_id"}),
)

Progress = Callable[[float, str], None]
DEMO_USERS = (*(user for _, user, _ in DEMO_FILES), EXTRA_USER)


def missing_demo_users(users: list[str]) -> list[str]:
    """Demo users absent from `users` (e.g. after `scripts/demo.py`, which ingests alice only).

    >>> missing_demo_users(["alice"])
    ['bob', 'carol', 'erin', 'sam']
    """
    return [u for u in DEMO_USERS if u not in users]


def ensure_demo_store(path: str | os.PathLike = DEFAULT_DEMO_STORE, *, progress: Progress | None = None) -> str:
    """Build (or complete) the demo store at `path` and return its path.

    `progress(fraction, message)` is called before each step (the dashboard shows a bar).
    """
    from memstore import Memory

    path = os.fspath(path)
    report = progress or (lambda _f, _m: None)
    if not DEMO_DIR.is_dir():
        raise FileNotFoundError(f"demo data not found at {DEMO_DIR} — run from a checkout of the memstore repo "
                                "or set MEMSTORE_PATH to a store of your own")
    steps = len(DEMO_FILES) + 1
    with Memory(path) as m:
        for i, (name, user, kwargs) in enumerate(DEMO_FILES):
            report(i / steps, f"ingesting {name} for {user}")
            m.ingest(DEMO_DIR / name, user_id=user, progress=False, **kwargs)
        done = not m.frame("memories", user_id=EXTRA_USER).is_empty()
    if not done:
        report(len(DEMO_FILES) / steps, f"adding the {EXTRA_USER!r} scope (contradiction, expiry, LLM runs)")
        _add_extra_scope(path)
    report(1.0, "demo store ready")
    return path


def _add_extra_scope(path: str) -> None:
    from memstore import Memory
    from memstore.testing.openai_server import ScriptedOpenAIServer

    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
    # Said in 2024 like the rest of the demo (the growth chart spans the conversations, not the day
    # the demo was built); only the two expiry dates are relative to now, so one memory has expired
    # and one expires within days whenever the demo is opened.
    with Memory(path, config={"slot_supersession": "off"}) as m:
        m.add("I live in Denver", user_id=EXTRA_USER, timestamp="2024-01-10T09:00:00")
        m.add("I live in Austin", user_id=EXTRA_USER, timestamp="2024-06-02T09:00:00")
        m.add("I have a dentist appointment on Friday", user_id=EXTRA_USER,
              timestamp="2024-11-27T09:00:00", expiration_date=now + dt.timedelta(days=3))
        m.add("I have a gym day pass for the weekend", user_id=EXTRA_USER,
              timestamp="2024-11-20T09:00:00", expiration_date=now - dt.timedelta(days=1))
    with ScriptedOpenAIServer(model="demo-llm") as srv:
        llm = {"provider": "openai", "base_url": srv.base_url, "api_key": "demo", "model": "demo-llm",
               "max_retries": 0, "timeout": 10}
        with Memory(path, config={"llm": llm, "slot_supersession": "off"}) as m:
            srv.push_chat(json.dumps({"facts": [{"text": "Sam plays the cello", "attributed_to": "Sam"},
                                                {"text": "Sam is learning Portuguese", "attributed_to": "Sam"}]}))
            m.add("I play the cello and I'm learning Portuguese", user_id=EXTRA_USER,
                  timestamp="2024-11-25T18:00:00")
            srv.push_chat("Sure! Sam likes hiking.")     # not JSON: recorded as a malformed run
            m.add("I like hiking on weekends", user_id=EXTRA_USER, timestamp="2024-11-26T18:00:00")
