"""Two pieces of an add at once: one on the calling thread, one on a helper thread.

An add waits on its models: the embedding endpoint answers over the network, the local ONNX
embedder runs with the GIL released. What the add does meanwhile in Python (spaCy, a read of the
store) then costs no wall time. Each piece must leave alone what the other reads or writes.

>>> out = []
>>> beside(lambda: out.append("here"), lambda: out.append("there"))
>>> sorted(out)
['here', 'there']
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# True: `here()` then `there()` on the calling thread (bench/write_profile.py times each step's
# process CPU, which only means something when the steps run one at a time)
IN_TURN = False


def beside(here: Callable[[], Any], there: Callable[[], Any]) -> None:
    """Run `there()` on a helper thread while `here()` runs on this one; return when both are
    done. If both fail, `here`'s error is raised (as if they had run in turn); else the one that
    failed. A thread per call (~0.1 ms), not a pool: a pool made before a fork has no threads after.

    >>> def fails():
    ...     raise ValueError("there")
    >>> beside(lambda: None, fails)
    Traceback (most recent call last):
    ...
    ValueError: there
    """
    if IN_TURN:
        here()
        there()
        return
    failed: list[BaseException] = []

    def run() -> None:
        try:
            there()
        except BaseException as exc:
            failed.append(exc)

    helper = threading.Thread(target=run, name="memstore-beside", daemon=True)
    helper.start()
    try:
        here()
    except (KeyboardInterrupt, SystemExit):
        raise                   # no wait for the helper (a daemon thread: it ends on its own)
    except BaseException:
        helper.join()
        raise
    helper.join()
    if failed:
        raise failed[0]
