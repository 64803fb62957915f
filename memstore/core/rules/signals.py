"""The search's channels and signals, named once: search, the CLI's `--explain`, the dashboard and
the HTTP API all read these (a second list drifted: the CLI's lacked `time`).

A *channel* finds candidates (and scores them); a *signal* is one column of the fused score.
With fewer than all three channels, search ranks by the channels' own signals: the fusion features
are off.

>>> effective_weights({"semantic": 0.5, "keyword": 0.3, "person": 0.04}, ["keyword"])
{'semantic': 0.0, 'keyword': 0.3, 'person': 0.0}
>>> set(CHANNELS) <= set(SIGNALS), FUSION_FEATURES
(True, ('slot', 'person', 'episode', 'time'))
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CHANNELS = ("semantic", "keyword", "entity")
FUSION_FEATURES = ("slot", "person", "episode", "time")
SIGNALS = (*CHANNELS, "recency", *FUSION_FEATURES)


def effective_weights(weights: dict[str, float], channels: Iterable[str]) -> dict[str, float]:
    """The weights search() fuses with for these channels: a channel that is off weighs 0, and
    with fewer than all three channels the fusion features are off too."""
    channels = set(channels)
    out = dict(weights)
    for ch in CHANNELS:
        if ch not in channels and ch in out:
            out[ch] = 0.0
    if channels != set(CHANNELS):
        out.update({k: 0.0 for k in FUSION_FEATURES if k in out})
    return out


def search_defaults(config: Any) -> dict[str, object]:
    """A store's search defaults as plain data — its `threshold` and the weight of every signal —
    from a MemoryConfig (None: the library's defaults). A server reports them on /health, so a
    client (the dashboard's Search lab) starts from the settings search() really uses.

    >>> d = search_defaults(None)
    >>> d["threshold"] is None, sorted(d["weights"]) == sorted(SIGNALS)
    (True, True)
    """
    if config is None:
        from memstore.core.config import MemoryConfig

        config = MemoryConfig()
    search = config.search
    return {"threshold": getattr(config, "threshold", None),
            "weights": {s: float(getattr(search, f"w_{s}")) for s in SIGNALS}}
