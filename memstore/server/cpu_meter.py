"""The owner process's recent CPU share, for /health: an operator sees the owner approach its limit.

One store has one owner; its work per add (the group commit's statements) is the serial part of a
server, so a server is full when its owner's CPU share nears 1.0 (one core) whatever the number of
fronts or workers. `share()` is the process's CPU seconds (all its threads) over the last minute
of wall time, divided by that wall time: 0.5 = half a core. Samples are taken when asked (each
/health call) and every SAMPLE_S at most; nothing runs in the background.

>>> m = CpuMeter(window_s=60.0)
>>> s = m.share(); isinstance(s["cores_used"], float) and s["window_s"] >= 0
True
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any

SAMPLE_S = 1.0


class CpuMeter:
    """CPU seconds of this process per wall second, over a sliding window."""

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        self._lock = threading.Lock()
        self._sample()

    def _sample(self) -> None:
        now, cpu = time.monotonic(), time.process_time()
        with self._lock:
            if not self._samples or now - self._samples[-1][0] >= SAMPLE_S:
                self._samples.append((now, cpu))
            while len(self._samples) > 2 and now - self._samples[1][0] >= self.window_s:
                self._samples.popleft()

    def share(self) -> dict[str, Any]:
        """{"cores_used": CPU seconds per wall second since the window's first sample, "window_s"}."""
        self._sample()
        now, cpu = time.monotonic(), time.process_time()
        with self._lock:
            t0, c0 = self._samples[0]
        wall = now - t0
        return {"cores_used": round((cpu - c0) / wall, 3) if wall > 0 else 0.0, "window_s": round(wall, 1)}
