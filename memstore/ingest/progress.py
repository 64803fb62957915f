"""A progress bar with messages/s and ETA on a terminal; nothing in CI or when output is piped.

The bar redraws every half second (elapsed time, rate, ETA) and names the stage at work, with the
messages of the write group being processed, so it moves while a group of thousands of messages is
extracted, embedded and written, not only when the group is committed.

>>> with Progress(total=10, enabled=False) as p:
...     p.stage("embed", 6)
...     p.advance(4)
>>> p.done, p.current
(4, 'embed · 6 messages')
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any


def wanted(flag: bool | None) -> bool:
    """`None` means: only on an interactive terminal and not in CI."""
    if flag is not None:
        return flag
    return sys.stderr.isatty() and not os.environ.get("CI")


class Progress:
    """`advance(n)` after each commit; the bar shows stored/total messages, msg/s and ETA."""

    def __init__(self, total: int, *, enabled: bool, description: str = "ingest") -> None:
        self.total, self.enabled, self.done = total, enabled, 0
        self._bar: Any = None
        self._task: Any = None
        self._t0 = time.perf_counter()
        self.description = description
        self.current = ""

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("messages · {task.fields[rate]:.0f} msg/s"), TimeElapsedColumn(),
                                     TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[stage]}"),
                                     console=Console(file=sys.stderr), transient=False, auto_refresh=True,
                                     refresh_per_second=2)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.description, total=self.total, rate=0.0, stage="")
        return self

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            rate = self.done / max(time.perf_counter() - self._t0, 1e-9)
            self._bar.update(self._task, advance=n, rate=rate)

    def stage(self, name: str, messages: int | None = None) -> None:
        """Show what the ingest is doing now (e.g. "embed · 2,000 messages") until the next stage."""
        self.current = name + (f" · {messages:,} messages" if messages else "")
        if self._bar is not None:
            rate = self.done / max(time.perf_counter() - self._t0, 1e-9)
            self._bar.update(self._task, stage=self.current, rate=rate)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
