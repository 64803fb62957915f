"""spaCy's matrix products on NumPy's BLAS, one thread, for the pipeline memstore loads.

thinc's default CPU ops multiply with cython-blis, which picks its kernels by CPU model and falls
back to a generic C loop on models it does not know (AMD family 19h, Zen 3/4, among them): there
~40% of an analysis is `bli_sgemm_generic_ref`. NumPy's OpenBLAS picks an AVX2/AVX-512 kernel for
the same products, ~4x faster for these sizes on one thread. With its default of a thread per core
these small products cost ~2x the CPU (the workers spin between calls) and, on a busy machine,
several times the time. So `use_numpy_blas(pipeline)` gives every layer of every component ops
whose `gemm` is NumPy's, run with NumPy's BLAS held to one thread for the duration of that one
product (`one_blas_thread()`): the rest of the process (the cosine scans of search) keeps its BLAS
threads. thinc's current ops (`get_current_ops`) are not changed. The products differ from blis's
in rounding only; the annotations are the stock pipeline's (tests/test_analysis_equivalence.py).

The parser/NER transition loop (`greedy_parse`) and HashEmbed's row sums still call blis through
`ops.cblas()` (level-1 and tiny products that spaCy's compiled code binds directly). That loop's
other cost is outside memstore: spaCy's wheels for Python < 3.12 are built with Cython profiling,
which takes and drops the GIL in most of its state look-ups (a LoCoMo add's analysis: ~20 ms on
3.11, ~14 ms on 3.12 with the same spaCy).

>>> from memstore.providers.nlp import SpacyNLP     # calls use_numpy_blas on the pipeline it loads
>>> ner = SpacyNLP().nlp.get_pipe("ner")
>>> {type(layer.ops).__name__ for layer in ner.model.walk()}
{'NumpyBlasOps'}
"""
from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from thinc.api import NumpyOps


class OneBlasThread:
    """Context manager: NumPy's BLAS libraries on one thread while any thread is inside; the last to
    leave restores the counts found by the first to enter (thread-safe, re-entrant). The BLAS thread
    count is process-wide, so there is one instance per process (`one_blas_thread()`)."""

    def __init__(self) -> None:
        from threadpoolctl import ThreadpoolController

        self._libs = ThreadpoolController().select(user_api="blas").lib_controllers
        self._lock = threading.Lock()
        self._inside = 0
        self._saved: list[int] = []

    def __enter__(self) -> None:
        with self._lock:
            if self._inside == 0:
                self._saved = [lib.get_num_threads() for lib in self._libs]
                for lib, n in zip(self._libs, self._saved):
                    if n != 1:
                        lib.set_num_threads(1)
            self._inside += 1

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside == 0:
                for lib, n in zip(self._libs, self._saved):
                    if n != 1:
                        lib.set_num_threads(n)


_ONE: OneBlasThread | None = None
_ONE_LOCK = threading.Lock()


def one_blas_thread() -> OneBlasThread:
    """The process's OneBlasThread (created on first use: it scans the loaded libraries, ~2 ms)."""
    global _ONE
    with _ONE_LOCK:
        if _ONE is None:
            _ONE = OneBlasThread()
        return _ONE


class NumpyBlasOps(NumpyOps):
    """thinc's NumpyOps with `gemm` on NumPy (`numpy.dot`), one BLAS thread per product."""

    def __init__(self) -> None:
        super().__init__(use_blis=False)
        self._one = one_blas_thread()

    def gemm(self, x: Any, y: Any, *, out: Any = None, trans1: bool = False, trans2: bool = False) -> Any:
        with self._one:
            return super().gemm(x, y, out=out, trans1=trans1, trans2=trans2)


def use_numpy_blas(pipeline: Any) -> None:
    """Give every layer of every component (enabled or not) of a spaCy pipeline NumpyBlasOps."""
    ops = NumpyBlasOps()
    for _name, proc in pipeline.components:
        model = getattr(proc, "model", None)
        if model is not None and hasattr(model, "walk"):
            for layer in model.walk():
                layer.ops = ops
