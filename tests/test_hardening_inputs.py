"""Bad inputs at the API edge come out as memstore errors (or TypeError for a wrong argument
type), never a traceback from DuckDB, the tokenizer or Python's recursion limit, and never with
another stored memory's id in the message. Id-based calls take an optional scope that must match."""
from __future__ import annotations

import pytest

import memstore
import memstore.core.errors as errors_module
from memstore import Memory
from memstore.core.errors import FilterError, InvalidIdError, InvalidInputError, MemstoreError, NotFoundError

HASHING = {"embedder": {"provider": "hashing"}}
LONE = "caf\udce9 au lait"


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    mem = Memory(str(tmp_path_factory.mktemp("inputs") / "s.duckdb"), config=HASHING)
    ids = [mem.add(f"Olga waters plant {i}", user_id="olga", infer=False)["results"][0]["id"] for i in range(3)]
    bob = mem.add("Bob repairs bikes", user_id="bob", agent_id="shop", infer=False)["results"][0]["id"]
    yield mem, ids, bob
    mem.close()


def deep(n: int) -> dict:
    f: dict = {"user_id": "olga"}
    for _ in range(n):
        f = {"AND": [f]}
    return {"user_id": "olga", "AND": [f]}


def calls(m: Memory, some_id: str):
    return {
        "get(123)": lambda: m.get(123),
        "get([...])": lambda: m.get(["a"]),
        "get('')": lambda: m.get(""),
        "get(control)": lambda: m.get("a\x00b"),
        "history(['a'])": lambda: m.history(["a"]),
        "history(123)": lambda: m.history(123),
        "update(123)": lambda: m.update(123, "x"),
        "update(id, '')": lambda: m.update(some_id, ""),
        "update(id, '   ')": lambda: m.update(some_id, text="   "),
        "update(id, lone surrogate)": lambda: m.update(some_id, LONE),
        "update(id, 42)": lambda: m.update(some_id, 42),
        "delete(123)": lambda: m.delete(123),
        "delete(None)": lambda: m.delete(None),
        "search(lone surrogate)": lambda: m.search(LONE, user_id="olga"),
        "search(123)": lambda: m.search(123, user_id="olga"),
        "add(lone surrogate, infer=False)": lambda: m.add(LONE, user_id="olga", infer=False),
        "add(lone surrogate)": lambda: m.add(LONE, user_id="olga"),
        "add([{content: lone}])": lambda: m.add([{"role": "user", "content": LONE}], user_id="olga"),
        "search(deep filter)": lambda: m.search("plant", filters=deep(500)),
        "get_all(deep filter)": lambda: m.get_all(filters=deep(500)),
        "get_all(deep NOT)": lambda: m.get_all(filters={"user_id": "olga", **_nots(600)}),
        "search(wide filter)": lambda: m.search("x", filters={"user_id": "olga", "OR": [{"role": "u"}] * 5000}),
        "get(id, user_id=123)": lambda: m.get(some_id, user_id=123),
    }


def _nots(n: int) -> dict:
    f: dict = {"role": "user"}
    for _ in range(n):
        f = {"NOT": f}
    return {"NOT": f}


def test_every_bad_input_is_a_memstore_error_or_type_error_and_shows_no_stored_id(m):
    mem, ids, bob = m
    stored = set(ids) | {bob}
    leaked, untyped = [], []
    for name, call in calls(mem, ids[0]).items():
        try:
            call()
        except (MemstoreError, TypeError) as exc:
            if any(i in str(exc) for i in stored - {ids[0]}):
                leaked.append(name)
        except BaseException as exc:
            untyped.append(f"{name}: {type(exc).__name__}: {str(exc)[:80]}")
    assert not untyped, untyped
    assert not leaked, leaked
    assert len(mem.get_all(user_id="olga")["results"]) == 3          # nothing stored, nothing lost


def test_the_errors_are_the_specific_ones_and_name_the_argument(m):
    mem, ids, _ = m
    with pytest.raises(InvalidIdError, match="memory_id"):
        mem.get(123)
    with pytest.raises(InvalidIdError):
        mem.history(["a"])
    with pytest.raises(InvalidInputError, match="text is empty"):
        mem.update(ids[0], "")
    with pytest.raises(InvalidInputError, match="text holds a lone surrogate at position 3"):
        mem.update(ids[0], LONE)
    with pytest.raises(InvalidInputError, match="query holds a lone surrogate"):
        mem.search(LONE, user_id="olga")
    with pytest.raises(InvalidInputError, match=r"messages\[0\].content"):
        mem.add(LONE, user_id="olga")
    with pytest.raises(FilterError, match="deeper than 32"):
        mem.search("plant", filters=deep(400))


def test_id_based_calls_with_a_scope_must_match_else_not_found(m):
    mem, ids, bob = m
    assert mem.get(bob, user_id="bob")["memory"] == "Bob repairs bikes"
    assert mem.get(bob, user_id="bob", agent_id="shop")["id"] == bob
    for call in (lambda: mem.get(bob, user_id="olga"), lambda: mem.get(bob, user_id="bob", agent_id="other"),
                 lambda: mem.update(bob, "Bob was hacked", user_id="olga"),
                 lambda: mem.delete(bob, user_id="olga"), lambda: mem.history(bob, user_id="olga"),
                 lambda: mem.get("no-such-id", user_id="olga")):
        with pytest.raises(NotFoundError) as info:
            call()
        assert "forbidden" not in str(info.value).lower()
    # a wrong scope and an unknown id say the same thing (ids cannot be probed)
    with pytest.raises(NotFoundError) as a:
        mem.get(bob, user_id="olga")
    with pytest.raises(NotFoundError) as b:
        mem.get("0" * len(bob), user_id="olga")
    assert str(a.value).replace(bob, "X") == str(b.value).replace("0" * len(bob), "X")
    assert mem.get(bob)["memory"] == "Bob repairs bikes"                     # unchanged by the refusals
    assert [h["event"] for h in mem.history(bob, user_id="bob")] == ["ADD"]
    out = mem.update(ids[2], "Olga waters plant two", user_id="olga")
    assert out and mem.get(ids[2])["memory"] == "Olga waters plant two"
    assert mem.delete(ids[2], user_id="olga")["deleted"] == 1


def test_every_error_class_is_exported_from_memstore():
    classes = {n for n, v in vars(errors_module).items()
               if isinstance(v, type) and issubclass(v, BaseException) and v.__module__ == errors_module.__name__}
    missing = sorted(n for n in classes if getattr(memstore, n, None) is not getattr(errors_module, n))
    assert not missing, f"not importable from memstore: {missing}"
    assert not sorted(set(classes) - set(memstore.__all__)), "missing from memstore.__all__"
