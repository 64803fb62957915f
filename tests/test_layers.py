"""The layers of ARCHITECTURE.md, enforced: every import points down, and nothing imports in a circle.

The import graph is read from the source (top-level, function-level and `TYPE_CHECKING` imports all
count: a lazy import is still a dependency). Each module belongs to the layer of its first-level
unit (`memstore/<unit>/...` or `memstore/<unit>.py`):

    0 core        the domain model and the rules (pure)
    1 store       the SQL door, the one writer, the scope cache, layout
    1 providers   models only: embedders, spaCy
    2 engine      extraction, pipeline (prepare / commit), retrieval, governance, ingest, analysis, audit,
                  runtime
    3 wire        what server and client share: wire format, transport, discovery
    4 api         the MemoryAPI protocol and its two implementations: the embedded Memory and the
                  HTTP MemoryClient (`Memory(url)` returns the latter)
    5 surfaces    server, client, cli, dashboard, integrations, cluster, lake, on_ray, testing, the package root

A new first-level unit must be given a layer here (and in ARCHITECTURE.md). `ALLOWED` lists edges
that may go up a layer; it is empty and should stay so.
"""
from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "memstore"

LAYERS: dict[str, int] = {
    "core": 0,
    "store": 1, "providers": 1,
    "extraction": 2, "pipeline": 2, "retrieval": 2, "governance": 2, "ingest": 2, "analysis": 2, "audit": 2, "runtime": 2,
    "api": 4, "memory": 4, "async_memory": 4,
    "wire": 3,
    "server": 5, "client": 5, "cli": 5, "dashboard": 5, "integrations": 5, "testing": 5, "cluster": 5,
    "lake": 5, "on_ray": 5, "__init__": 5, "__main__": 5,
}
ALLOWED: set[tuple[str, str]] = set()      # (importer, imported) modules allowed to point up: none


def _modules() -> dict[str, Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in mods:
            return ".".join(parts[:i])
    return None


def import_edges() -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every memstore import in memstore/, lazy ones included."""
    mods = _modules()
    edges = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            for t in targets:
                if t.split(".")[0] != "memstore":
                    continue
                dest = _resolve(t, mods)
                if dest and dest != mod:
                    edges.append((mod, dest, node.lineno))
    return edges


def unit(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _cycles(adj: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(adj):
        if v not in index:
            visit(v)
    return out


def test_every_unit_has_a_layer() -> None:
    missing = sorted({unit(m) for m in _modules()} - set(LAYERS))
    assert not missing, f"give these first-level units a layer in tests/test_layers.py and ARCHITECTURE.md: {missing}"


def test_no_import_points_up_a_layer() -> None:
    up = [f"memstore/{'/'.join(a.split('.')[1:])}.py:{line} imports {b} ({unit(a)}={LAYERS.get(unit(a))} < "
          f"{unit(b)}={LAYERS.get(unit(b))})"
          for a, b, line in import_edges()
          if LAYERS.get(unit(b), 0) > LAYERS.get(unit(a), 0) and (a, b) not in ALLOWED]
    assert not up, "imports that point up a layer:\n" + "\n".join(sorted(up))


def test_no_cycle_among_units() -> None:
    adj: dict[str, set[str]] = collections.defaultdict(set)
    for a, b, _ in import_edges():
        if unit(a) != unit(b):
            adj[unit(a)].add(unit(b))
    assert _cycles(adj) == []


def test_no_cycle_among_modules() -> None:
    adj: dict[str, set[str]] = collections.defaultdict(set)
    for a, b, _ in import_edges():
        adj[a].add(b)
    assert _cycles(adj) == []


def test_allowed_list_is_empty() -> None:
    assert ALLOWED == set()


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module top?) for every import statement of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.module or "", id(node) in top))
    return out


def test_ray_is_optional() -> None:
    """Ray is an extra (memstore[ray]): only memstore/on_ray imports it, inside the functions that
    run on Ray, and nothing imports memstore.on_ray at a module's top (the CLI loads it for
    --on-ray only), so memstore without Ray installed imports and works."""
    bad = []
    for path in ROOT.rglob("*.py"):
        inside = path.relative_to(ROOT).parts[0] == "on_ray"
        for name, at_top in _imports(path):
            if name.split(".")[0] == "ray" and (not inside or at_top):
                bad.append(f"{path.relative_to(ROOT.parent)} imports {name}" + (" at its top" if at_top else ""))
            if name.startswith("memstore.on_ray") and at_top and not inside:
                bad.append(f"{path.relative_to(ROOT.parent)} imports {name} at its top")
    assert bad == []


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    """The graph counts imports inside functions and TYPE_CHECKING blocks (what hid the old knot)."""
    edges = {(a, b) for a, b, _ in import_edges()}
    # memstore/__init__.py imports its errors at the top; cli imports lazily inside functions
    assert ("memstore", "memstore.core.errors") in edges
    assert any(a.startswith("memstore.cli") and b.startswith("memstore.memory") for a, b in edges) or \
        any(a.startswith("memstore.cli") and unit(b) in ("api", "memory", "client") for a, b in edges)


@pytest.mark.parametrize("adj, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}}, []),
])
def test_cycle_finder(adj: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(adj) == expected


# -- the served path is assembled from public stages --------------------------------------------
SURFACES = ("server", "client", "cli", "dashboard", "integrations", "cluster", "lake", "testing")
# surface modules that may import the engine directly, and why (everything else goes through api/)
ENGINE_IMPORTS_ALLOWED: dict[str, str] = {
    "memstore.server.front_search": "a front runs the retrieval engine on its replicated snapshot copies",
    "memstore.server.openapi_rules": "the OpenAPI document states the filter language's JSON path rule",
}
ENGINE = ("pipeline", "retrieval", "store")


def test_server_reaches_the_engine_only_through_the_api() -> None:
    bad = [f"{a}:{line} imports {b}" for a, b, line in import_edges()
           if unit(a) == "server" and unit(b) in ENGINE and a not in ENGINE_IMPORTS_ALLOWED]
    assert not bad, ("server/ imports the engine below the API (use memstore.api: Memory.stages, "
                     "search_with_vector, ...; or add the module to ENGINE_IMPORTS_ALLOWED with a reason):\n"
                     + "\n".join(sorted(bad)))


def _api_private_names() -> set[str]:
    """Private attributes and functions of the API layer: `self._x` set there, `def _x` there."""
    names: set[str] = set()
    paths = [ROOT / "memory.py", ROOT / "runtime.py", *sorted((ROOT / "api").glob("*.py"))]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                    node.name.startswith("_") and not node.name.startswith("__"):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                names.add(node.attr)
    return names


def test_no_surface_touches_a_private_attribute_of_the_api() -> None:
    private = _api_private_names()
    assert {"_rt", "_pool"} <= private          # the checker sees what it guards
    found = []
    for mod, path in _modules().items():
        if unit(mod) not in SURFACES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private and \
                    not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("memstore.api", "memstore.memory")):
                found += [f"{path.relative_to(ROOT.parent)}:{node.lineno} imports {a.name}"
                          for a in node.names if a.name.startswith("_")]
    assert not found, "surfaces reaching into the API's private parts:\n" + "\n".join(found)
