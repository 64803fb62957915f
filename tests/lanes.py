"""The fast lane: tests that start processes, browsers or services are marked `process` here.

`make test` runs everything (what CI runs); `make test-fast` runs `-m "not process"`. A test is
marked when its own source, a fixture it uses, or a helper function of its module (followed
through calls within the module) names something that starts another process: a memstore server,
a cluster, HAProxy, PostgreSQL, a browser, a notebook kernel, a worker pool, Ray or a CLI
subprocess. A test can also say so itself with `@pytest.mark.process`.
"""
from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

import pytest

STARTS_PROCESS = re.compile(
    r"ServerProcess|ClusterProcess|PostgresCluster|subprocess|Popen|sys\.executable|haproxy"
    r"|playwright|chromium|nbclient|NotebookClient|ray\.init|multiprocessing|ProcessPool"
    r"|start_workers|workers\s*=\s*[1-9]|--workers|--fronts|fronts\s*=\s*[1-9]|os\.fork|os\.kill")


@functools.cache
def _module_helpers(path: str) -> frozenset[str]:
    """Names of the module's functions that start a process, directly or through each other."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return frozenset()
    source = Path(path).read_text()
    funcs = {n.name: ast.get_source_segment(source, n) or ""
             for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    marked = {name for name, text in funcs.items() if STARTS_PROCESS.search(text)}
    while True:
        more = {name for name, text in funcs.items() if name not in marked
                and any(re.search(rf"\b{re.escape(m)}\b", text) for m in marked)}
        if not more:
            return frozenset(marked)
        marked |= more


def _starts_process(item: pytest.Item) -> bool:
    texts = []
    func = getattr(item, "function", None)
    if func is None:
        return False
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    for obj in [func] + [d.func for fixdefs in defs.values() for d in fixdefs]:
        try:
            texts.append((inspect.getsource(obj), inspect.getsourcefile(obj) or ""))
        except (OSError, TypeError):
            continue
    for text, path in texts:
        if STARTS_PROCESS.search(text):
            return True
        helpers = _module_helpers(path) if path else frozenset()
        if any(re.search(rf"\b{re.escape(h)}\b", text) for h in helpers):
            return True
    return False


def mark_process_tests(items: list[pytest.Item]) -> None:
    """Add the `process` marker to every item that starts a process (see the module docstring)."""
    for item in items:
        if item.get_closest_marker("process") is None and _starts_process(item):
            item.add_marker(pytest.mark.process)
