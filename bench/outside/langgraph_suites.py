"""Run LangGraph's own store test files, unchanged, against `MemstoreStore`.

    python bench/outside/langgraph_suites.py --checkout /path/to/langgraph [--target embedded|serve]

`--checkout` is a LangGraph work tree or a bare git directory (its HEAD is read). The test files
are copied to a scratch folder next to a conftest that installs bench/outside/langgraph_shims.py
(the stores the suites build become `MemstoreStore`s); pytest then runs them and this prints one
line per suite with pass / fail / error counts, and the failing tests. Nothing is copied into this
repository. Tests of a backend's internals (its SQL, migrations, connection pools, the async
batching machinery, helpers private to one backend) are deselected: the list is BACKEND_INTERNAL.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

SUITES = {   # name -> (test file, extra files the suite imports from its own tests/ package)
    "inmemory": ("libs/checkpoint/tests/test_store.py", ["libs/checkpoint/tests/embed_test_utils.py"]),
    "sqlite": ("libs/checkpoint-sqlite/tests/test_store.py", []),
    "postgres": ("libs/checkpoint-postgres/tests/test_store.py", []),
}

BACKEND_INTERNAL = [
    # the async batching machinery of BaseStore (mocked stores), and a pure helper of langgraph's
    "test_async_batch_store", "test_get_text_at_path", "test_async_batched_vector_search_concurrent",
    # SQLite / Postgres internals: migrations, GLOB/LIKE escaping helpers, query text, sqlite_master
    "test_nonnull_migrations", "test_escape_glob_literal", "test_escape_like_literal", "test_namespace_match_pattern",
    "test_list_namespaces_prefix_uses_indexable_condition", "test_vector_store_initialization",
    # Postgres rows expired through SQL on the backend's own table
    "test_omit_expired",
]

CONFTEST = '''
import sys
sys.path.insert(0, {here!r})
import langgraph_shims
langgraph_shims.install()
from langgraph_shims import CharacterEmbeddings  # noqa: F401  (postgres tests import it from tests.conftest)
DEFAULT_URI = "postgres://stand-in/memstore"
VECTOR_TYPES = ["vector"]

import asyncio, inspect, pytest


@pytest.fixture
def fake_embeddings():
    return CharacterEmbeddings(dims=500)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests on a fresh event loop (what pytest-asyncio's auto mode does)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(pyfuncitem.obj(**args))
        return True
    return None
'''


def read_file(checkout: str, path: str) -> str:
    """A file of the checkout: from the work tree, else from the git directory's HEAD."""
    full = os.path.join(checkout, path)
    if os.path.exists(full):
        with open(full, encoding="utf-8") as fh:
            return fh.read()
    return subprocess.run(["git", "--git-dir", checkout, "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def prepare(checkout: str, suite: str, root: str) -> str:
    """Lay the suite out as `<root>/<suite>/tests/` (its own package, as upstream) and return it."""
    test_file, extras = SUITES[suite]
    pkg = os.path.join(root, suite, "tests")
    os.makedirs(pkg, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for path in [test_file, *extras]:
        with open(os.path.join(pkg, os.path.basename(path)), "w", encoding="utf-8") as fh:
            fh.write(read_file(checkout, path))
    with open(os.path.join(pkg, "conftest.py"), "w", encoding="utf-8") as fh:
        fh.write(CONFTEST.replace("{here!r}", repr(HERE)))
    return os.path.join(root, suite)


def run_suite(checkout: str, suite: str, root: str, target: str, extra: list[str]) -> dict[str, list[str]]:
    """pytest on one suite; {"passed": [...], "failed": [...], "error": [...], "skipped": [...]}."""
    where = prepare(checkout, suite, root)
    report = os.path.join(where, "report.xml")
    deselect = " or ".join(BACKEND_INTERNAL)
    cmd = [sys.executable, "-m", "pytest", "tests/test_store.py", "-q", "-p", "no:cacheprovider",
           "-o", "addopts=", "-o", "asyncio_mode=auto", "--rootdir", where, "-k", f"not ({deselect})",
           f"--junitxml={report}", *extra]
    env = {**os.environ, "MEMSTORE_LG_TARGET": target, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True)
    out: dict[str, list[str]] = {"passed": [], "failed": [], "error": [], "skipped": []}
    if not os.path.exists(report):
        out["error"].append(f"pytest did not run: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        return out
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        kinds = {child.tag for child in case}
        kind = "failed" if "failure" in kinds else "error" if "error" in kinds else \
            "skipped" if "skipped" in kinds else "passed"
        msg = next((c.get("message", "") for c in case if c.tag in ("failure", "error")), "")
        out[kind].append(f"{name}: {msg[:200]}" if msg else name)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", required=True, help="LangGraph work tree or git directory")
    ap.add_argument("--target", choices=["embedded", "serve"], default="embedded")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="default: all")
    ap.add_argument("--show", action="store_true", help="list every failing test with its message")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="lg-suites-")
    total = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for suite in args.suite or sorted(SUITES):
        res = run_suite(args.checkout, suite, root, args.target, args.pytest_args)
        counts = {k: len(v) for k, v in res.items()}
        for k in total:
            total[k] += counts[k]
        print(f"{args.target:8} {suite:9} passed {counts['passed']:3}  failed {counts['failed']:3}  "
              f"error {counts['error']:3}  skipped {counts['skipped']:3}")
        if args.show:
            for kind in ("failed", "error"):
                for line in res[kind]:
                    print(f"    {kind}: {line}")
    print(f"{args.target:8} {'total':9} passed {total['passed']:3}  failed {total['failed']:3}  "
          f"error {total['error']:3}  skipped {total['skipped']:3}")
    return 0 if total["failed"] == total["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
