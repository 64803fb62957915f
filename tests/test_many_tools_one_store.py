"""The product card's users on one store at once: a notebook process holding `Memory(path)`, a
`memstore ingest` process and the dashboard, all while `memstore serve` owns the file."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memstore.testing.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {"embedder": {"provider": "hashing"}}
pytestmark = pytest.mark.slow


def test_notebook_ingest_and_dashboard_at_the_same_time(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    store = str(tmp_path / "team.duckdb")
    with ServerProcess(store, config=CONFIG):
        notebook = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            from memstore import Memory
            from memstore.api.http_client import MemoryClient
            m = Memory({store!r})                    # the notebook: transparently a client
            assert isinstance(m, MemoryClient), type(m)
            for i in range(30):
                m.add(f"I bought plant number {{i}}", user_id="nb", infer=False)
                assert m.search(f"plant number {{i}}", user_id="nb")["results"]
            print("NOTEBOOK OK", len(m.get_all(user_id="nb")["results"]), flush=True)
            """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ingest = subprocess.Popen([sys.executable, "-m", "memstore.cli", "ingest",
                                   str(ROOT / "data/demo/chatgpt/alice/conversations.json"), "--user", "alice",
                                   "--store", store], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        monkeypatch.setenv("MEMSTORE_PATH", store)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()      # the dashboard
        assert not at.exception, [e.value for e in at.exception]
        assert any("through the memstore server at http://127.0.0.1" in c.value for c in at.sidebar.caption)
        nb_out, nb_err = notebook.communicate(timeout=300)
        ing_out, ing_err = ingest.communicate(timeout=300)
        assert notebook.returncode == 0 and "NOTEBOOK OK 30" in nb_out, nb_err[-2000:]
        assert ingest.returncode == 0, ing_err[-2000:]
        assert "messages stored" in ing_out + ing_err
        at.run()                                  # the dashboard sees what the others wrote
        assert not at.exception
        labels = at.selectbox(key="scope").options
        assert "user:alice" in labels and "user:nb" in labels
