"""Shared fixtures: real DuckDB files, the real local embedder, a real OpenAI-compatible HTTP server."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memstore import Memory

sys.path.insert(0, str(Path(__file__).parent))
from lanes import mark_process_tests


def pytest_collection_modifyitems(config, items):
    """Mark the tests that start processes, browsers or services (`make test-fast` leaves them out)."""
    mark_process_tests(items)
from memstore.testing.openai_server import ScriptedOpenAIServer


@pytest.fixture
def store_path(tmp_path):
    """Path of a fresh DuckDB file in a temporary directory."""
    return str(tmp_path / "store" / "memstore.duckdb")


@pytest.fixture
def memory(store_path):
    """Memory on a real file with the offline defaults (local ONNX embedder, heuristic extractor)."""
    m = Memory(store_path)
    yield m
    m.close()


@pytest.fixture
def llm_server():
    """A real HTTP server on 127.0.0.1 speaking the OpenAI API with scripted answers."""
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def llm_memory(store_path, llm_server):
    """Memory whose extractor is the real `openai` client pointed at the scripted server."""
    m = Memory(store_path, config={"llm": {"provider": "openai", "base_url": llm_server.base_url,
                                            "api_key": "test", "model": "scripted-model", "max_retries": 0,
                                            "timeout": 5}})
    yield m
    m.close()
