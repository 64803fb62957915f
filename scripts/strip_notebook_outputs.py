"""Remove outputs, execution counts and run metadata from notebooks, so they are committed clean.

    python scripts/strip_notebook_outputs.py              # every notebooks/*.ipynb, in place
    python scripts/strip_notebook_outputs.py --check      # list dirty notebooks, exit 1 if any
    python scripts/strip_notebook_outputs.py path/a.ipynb

Only outputs and run-time metadata change; sources, cell ids and notebook metadata stay.
tests/test_notebooks.py fails while a committed notebook has outputs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
RUN_METADATA = ("execution", "collapsed", "scrolled")  # written by Jupyter / nbclient when a cell runs


def strip(nb: nbformat.NotebookNode) -> bool:
    """Clear every code cell's outputs and run metadata in place; True if anything changed.

    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    >>> nb.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    >>> nb.cells[0].execution_count = 1
    >>> strip(nb), nb.cells[0].outputs, nb.cells[0].execution_count, strip(nb)
    (True, [], None, False)
    """
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            cell.outputs, cell.execution_count = [], None
            changed = True
        for key in RUN_METADATA:
            if key in cell.metadata:
                del cell.metadata[key]
                changed = True
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/*.ipynb)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook has outputs")
    args = ap.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("*.ipynb"))
    dirty = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if strip(nb):
            dirty.append(path)
            if not args.check:
                nbformat.write(nb, path)
    verb = "have outputs" if args.check else "stripped"
    for path in dirty:
        print(f"{verb}: {path}")
    if args.check and dirty:
        print("run: python scripts/strip_notebook_outputs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
