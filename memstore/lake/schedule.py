"""`memstore serve --publish-to L --publish-every 60s`: a thread that publishes the served store.

>>> parse_every("60s"), parse_every("2m"), parse_every("1.5"), parse_every("250ms")
(60.0, 120.0, 1.5, 0.25)
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from memstore.core.errors import ConfigError, MemstoreError

if TYPE_CHECKING:
    from memstore.store.database import Database

log = logging.getLogger("memstore.lake")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_every(text: str | float) -> float:
    """Seconds of an interval written as 60s, 2m, 1h, 250ms or a plain number of seconds."""
    raw = str(text).strip().lower()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if raw.endswith(unit):
            number, scale = raw[: -len(unit)], _UNITS[unit]
            break
    else:
        number, scale = raw, 1.0
    try:
        value = float(number) * scale
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(f"--publish-every {text!r} is not an interval", hint="write it as 60s, 5m, 1h or 250ms")
    return value


class Publisher:
    """Publish `db` to `lake` every `every` seconds on a daemon thread (first publish right away);
    `.last` (the last report as a dict) and `.error` (the last failure) for status; `.stop()`
    finishes a publish in flight and, with `final=True`, publishes once more.

    A tick when the store has not changed since the last successful publish (its scope cache
    generation, which every commit and any change of the store files bumps, is the same) publishes
    nothing and reads nothing: a publish that finds no change still hashes every row of every table
    (~12 s CPU on a 500k-memory shard). `.skipped` counts those ticks."""

    def __init__(self, db: Database, lake: str, every: float, *, data_path: str | None = None,
                 shard: str | None = None, **options: Any) -> None:
        self.db, self.lake, self.every = db, lake, every
        self.kw = {"data_path": data_path, "shard": shard, **options}
        self.last: dict[str, Any] | None = None
        self.error: str | None = None
        self.publishes = 0
        self.skipped = 0
        self._published_at: int | None = None     # store generation the last good publish started from
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="memstore-lake-publisher", daemon=True)

    def start(self) -> Publisher:
        self._thread.start()
        return self

    def publish_now(self, *, force: bool = False) -> dict[str, Any] | None:
        """One publish now (serialised with the thread's); the report, None on failure (see .error).
        Unless `force`, nothing is done when the store is unchanged since the last good publish."""
        from memstore.lake.publish import publish

        with self._lock:
            generation = self.db.scope_cache.current_generation(self.db)
            if not force and self.error is None and generation == self._published_at:
                self.skipped += 1
                return self.last
            try:
                report = publish(self.db, self.lake, **self.kw)
            except MemstoreError as exc:
                self.error = str(exc)
                log.warning("lake publish failed: %s", exc)
                return None
            self.kw["data_path"] = None            # the lake keeps its data path after the first publish
            self.last, self.error = report.to_dict(), None
            self.publishes += 1
            self._published_at = generation
            return self.last

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.publish_now()
            self._stop.wait(max(0.0, self.every - (time.monotonic() - started)))

    def stop(self, *, final: bool = True, timeout: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if final:
            self.publish_now()
