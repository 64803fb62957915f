"""Everything a user can call is documented: CLI commands, config keys, public Memory methods."""
from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from memstore import Memory, MemoryConfig
from memstore.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _cli_commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _cli_commands())
def test_cli_command_is_in_readme(command):
    assert f"memstore {command}" in README, f"`memstore {command}` is not documented in README.md"


def _config_keys() -> list[str]:
    keys = []
    for f in dataclasses.fields(MemoryConfig):
        if dataclasses.is_dataclass(f.type) or f.name in ("llm", "embedder", "nlp", "search", "limits", "audit"):
            sub = type(getattr(MemoryConfig(), f.name))
            keys += [f"{f.name}.{g.name}" for g in dataclasses.fields(sub)]
        else:
            keys.append(f.name)
    return keys


@pytest.mark.parametrize("key", _config_keys())
def test_config_key_is_in_readme(key):
    assert f"`{key}`" in README, f"config key `{key}` is not documented in README.md"


def _public_methods() -> list[str]:
    return sorted(n for n, v in inspect.getmembers(Memory) if not n.startswith("_") and
                  (callable(v) or isinstance(v, property)) and n not in ("db", "path"))


@pytest.mark.parametrize("name", _public_methods())
def test_public_method_is_in_readme_and_has_docstring(name):
    assert f"`{name}" in README, f"Memory.{name} is not documented in README.md"
    assert inspect.getdoc(getattr(Memory, name)), f"Memory.{name} has no docstring"


def _named_paths() -> list[tuple[str, str]]:
    """Every `memstore/…` file or folder README.md and ARCHITECTURE.md name (store paths excluded)."""
    import re
    root = Path(__file__).resolve().parent.parent
    found = []
    for doc in ("README.md", "ARCHITECTURE.md"):
        for m in re.finditer(r"(?<![\w/.-])(memstore/[A-Za-z0-9_./-]+)", (root / doc).read_text(encoding="utf-8")):
            path = m.group(1).rstrip(".,:;)")
            if not path.endswith((".duckdb", ".json", ".jsonl")):
                found.append((doc, path))
    return sorted(set(found))


@pytest.mark.parametrize("doc,path", _named_paths())
def test_named_path_exists(doc, path):
    root = Path(__file__).resolve().parent.parent
    assert (root / path).exists() or (root / f"{path}.py").exists(), f"{doc} names {path}, which does not exist"
