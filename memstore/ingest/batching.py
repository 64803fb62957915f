"""Helpers of the ingest runner that need no store: the cut of a conversation into extraction
batches (the text a batch probes related memories with is core/rules/context_probe.py, shared with
add(); the cache of bulk-parsed spaCy docs is memstore/extraction/doc_cache.py)."""
from __future__ import annotations


def split_batches(n: int, size: int) -> list[range]:
    """Cut n messages of one conversation into round(n / size) batches of nearly equal length
    (each between ½ and 1½ × size): 29 messages at size 20 make one call, not 20 + 9. A short
    tail would cost a whole LLM call for a few messages; batches never span conversations.

    >>> [len(b) for b in split_batches(29, 20)], [len(b) for b in split_batches(31, 20)]
    ([29], [16, 15])
    >>> [len(b) for b in split_batches(5, 20)], split_batches(0, 20)
    ([5], [])
    >>> [len(b) for b in split_batches(100, 20)]
    [20, 20, 20, 20, 20]
    """
    if n <= 0:
        return []
    k = max(1, int(n / size + 0.5))
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


