"""The notebooks in notebooks/ run top to bottom on the demo data, offline, in a fresh kernel; they are
committed without outputs; a run leaves no file behind.

Each notebook is executed with nbclient on the `python3` kernel that this interpreter's ipykernel
provides (JUPYTER_PREFER_ENV_PATH makes it win over any user-level kernelspec). A cell prepended
in memory refuses every non-loopback connection, so a notebook that reaches the network fails here.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_ingest_and_explore", "03_truth_over_time", "04_search_tuning", "05_governance",
            "06_whole_fleet"]
NEEDS_POSTGRES = {"06_whole_fleet"}     # starts a throwaway PostgreSQL for its lake (apt-get install postgresql)

OFFLINE_GUARD = '''\
import socket as _socket

_real_connect, _real_connect_ex = _socket.socket.connect, _socket.socket.connect_ex
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _check(sock, address):
    if sock.family in (_socket.AF_INET, _socket.AF_INET6) and address[0] not in _LOOPBACK:
        raise OSError(f"notebook tried to reach {address!r}: notebooks must run offline")


def _connect(self, address):
    _check(self, address)
    return _real_connect(self, address)


def _connect_ex(self, address):
    _check(self, address)
    return _real_connect_ex(self, address)


_socket.socket.connect, _socket.socket.connect_ex = _connect, _connect_ex
'''


# Altair charts each notebook draws (04's LoCoMo curve only when that data set is present).
CHARTS = {"01_quickstart": 1, "02_ingest_and_explore": 2, "03_truth_over_time": 1, "04_search_tuning": 2,
          "05_governance": 0, "06_whole_fleet": 1}
EXTERNAL = re.compile(r"<script[^>]*\bsrc\s*=|https?://[^\s\"')]*(cdn|jsdelivr|unpkg|vega)|require\.config", re.I)


def chart_problems(nb) -> tuple[int, list[str]]:
    """(static SVG charts, outputs that would load a script from the network) of an executed notebook.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("c")])
    >>> nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
    ...     "text/html": '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'})]
    >>> chart_problems(nb)
    (0, ['cell 0: text/html'])
    """
    svgs, bad = 0, []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            for mime, value in (out.get("data") or {}).items():
                text = value if isinstance(value, str) else "".join(value) if isinstance(value, list) else str(value)
                if mime == "image/svg+xml" and "<svg" in text:
                    svgs += 1
                if "vegalite" in mime or EXTERNAL.search(text):
                    bad.append(f"cell {i}: {mime}")
    return svgs, bad


def _load_strip():
    spec = importlib.util.spec_from_file_location("strip_notebook_outputs", ROOT / "scripts" / "strip_notebook_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(*dirs: Path) -> dict[Path, tuple[int, int]]:
    """Every file under `dirs` with its size and mtime (a changed demo file counts as written)."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for d in dirs for p in d.rglob("*") if p.is_file()}


def test_every_notebook_is_here():
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None or "execution" in c.metadata)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs — run python scripts/strip_notebook_outputs.py"
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_strip_script_clears_outputs_and_keeps_sources(tmp_path):
    strip = _load_strip()
    src = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb = nbformat.from_dict(src)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="out\n")]
        cell.execution_count = i + 1
        cell.metadata["execution"] = {"iopub.status.busy": "2024-01-01T00:00:00Z"}
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    assert strip.main(["--check", str(path)]) == 1           # --check reports and changes nothing
    assert nbformat.read(path, as_version=4).cells[1].outputs
    assert strip.main([str(path)]) == 0
    clean = nbformat.read(path, as_version=4)
    assert [c.source for c in clean.cells] == [c.source for c in src.cells]
    assert all(not c.outputs and c.execution_count is None and "execution" not in c.metadata
               for c in clean.cells if c.cell_type == "code")
    assert strip.main(["--check", str(path)]) == 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline_and_cleans_up(path, tmp_path, monkeypatch):
    if path.stem in NEEDS_POSTGRES:
        from memstore.testing.postgres import available

        if not available():
            pytest.skip("PostgreSQL is not installed")
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(OFFLINE_GUARD))
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")     # this venv's python3 kernel, not a user's
    monkeypatch.setenv("TMPDIR", str(tmp_path))             # the kernel's tempfile stores land here
    watched = (NOTEBOOK_DIR, ROOT / "data" / "demo")       # where a notebook could leave a store or touch the inputs
    before = _files(*watched)
    client = NotebookClient(nb, kernel_name="python3", timeout=300,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()            # raises CellExecutionError with the failing cell and its traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    svgs, external = chart_problems(nb)
    assert not external, f"chart outputs that need a network or a JavaScript renderer: {external}"
    import os
    locomo = os.environ.get("LOCOMO_JSON") or ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo_dev5.json"
    have_locomo = Path(locomo).is_file()       # as notebook 04 decides
    wanted = CHARTS[path.stem] - (1 if path.stem == "04_search_tuning" and not have_locomo else 0)
    assert svgs >= wanted, f"{path.stem}: {svgs} static SVG chart(s), expected {wanted}"
    assert _files(*watched) == before, "the notebook wrote into notebooks/ or data/demo/"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("memstore-nb-")], \
        "the notebook left its temporary store behind"
