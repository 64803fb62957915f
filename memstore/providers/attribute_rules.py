"""spaCy's attribute_ruler (tag → POS, morphology and lemma exceptions) without its Matcher.

The stock component runs a Matcher whose 17 set and regex predicates are Python calls on every
token: ~0.4 ms a fact, ~10% of analysing one. Its patterns are all one- or two-token specs on
TAG, LOWER, DEP and IS_SPACE, so they compile to dictionary look-ups. `compile_rules` returns
None when a pipeline's ruler uses anything else (operators, other attributes or predicates); the
caller then keeps the stock component. Same matches, same order, same `set_token_attrs`: the
annotations are identical (tests/test_analysis_equivalence.py checks it on every LoCoMo fact).
The rules a token starts are memoised by the attribute ids they read: ~1 us a token.

>>> from memstore.providers.nlp import SpacyNLP
>>> pipe = SpacyNLP().nlp
>>> rules = compile_rules(pipe.get_pipe("attribute_ruler"))
>>> doc = pipe.get_pipe("tagger")(pipe.get_pipe("tok2vec")(pipe.make_doc("She is here")))
>>> [t.pos_ for t in rules(doc)]
['PRON', 'AUX', 'ADV']
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import Any

# Matcher attribute -> Token attribute holding its string (a missing DEP/TAG reads as "", as the
# Matcher's allow_missing=True compares the 0 hash)
_STRING_ATTRS = {"TAG": "tag_", "LOWER": "lower_", "DEP": "dep_", "ORTH": "orth_", "TEXT": "orth_", "NORM": "norm_"}
_BOOL_ATTRS = {"IS_SPACE": "is_space", "IS_PUNCT": "is_punct", "IS_DIGIT": "is_digit", "IS_ALPHA": "is_alpha"}
_INDEXED = ("LOWER", "TAG", "DEP")          # attributes a pattern's first token is looked up by
# Token attribute whose id stands for the string one in the memo key (booleans stand for themselves)
_ID_ATTRS = {"tag_": "tag", "lower_": "lower", "dep_": "dep", "orth_": "orth", "norm_": "norm"}
_MEMO_SIZE = 50_000                          # entries (~200 bytes each); cleared when full


class CompiledRules:
    """Callable like the AttributeRuler it was compiled from (`doc -> doc`, and `pipe`).

    Which rules a token starts depends only on the attributes their first-token specs read, so
    that answer is memoised per distinct combination of those attributes (ids, not strings); only
    the later tokens of the few longer patterns are checked per token."""

    def __init__(self, rules: list[tuple[int, list[list[Callable[[Any], bool]]], int, dict]],
                 index: dict[str, dict[str, list[int]]], scan: list[int], key_attrs: list[str]) -> None:
        self._rules = rules            # (key, [token checks per position], index, attrs), by key
        self._index = index            # attr -> value -> rule numbers whose first token needs it
        self._scan = scan              # rule numbers checked on every token
        self._key = attrgetter(*key_attrs)   # -> the memo key: a tuple of ids and booleans
        self._memo: dict[Any, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        from spacy.tokens._retokenize import set_token_attrs

        self._set = set_token_attrs

    def _starts(self, tok: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(one-token rules that match `tok`, longer rules whose first token spec it matches)."""
        rules, index = self._rules, self._index
        cands = set(self._scan)
        for attr, value in (("LOWER", tok.lower_), ("TAG", tok.tag_), ("DEP", tok.dep_)):
            cands.update(index[attr].get(value, ()))
        hits = sorted(r for r in cands if all(c(tok) for c in rules[r][1][0]))
        return tuple(r for r in hits if len(rules[r][1]) == 1), tuple(r for r in hits if len(rules[r][1]) > 1)

    def __call__(self, doc: Any) -> Any:
        rules, memo, key_of = self._rules, self._memo, self._key
        n = len(doc)
        tokens = list(doc)
        found: list[tuple[int, int]] = []          # (rule number, start): sorted = the ruler's order
        for start, tok in enumerate(tokens):
            key = key_of(tok)
            hit = memo.get(key)
            if hit is None:
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                hit = memo[key] = self._starts(tok)
            single, longer = hit
            for r in single:
                found.append((r, start))
            for r in longer:
                checks = rules[r][1]
                if start + len(checks) <= n and all(c(tokens[start + i]) for i in range(1, len(checks))
                                                    for c in checks[i]):
                    found.append((r, start))
        # all matches first, then the attributes (the Matcher saw the tokens before any change),
        # in key order so that later rules win, as AttributeRuler.match sorts them
        found.sort()
        for r, start in found:
            _key, checks, index, attrs = rules[r]
            pos = start + index if index >= 0 else start + len(checks) + index
            self._set(tokens[pos], attrs)
        return doc

    def pipe(self, docs: Iterable[Any], batch_size: int = 128) -> Iterator[Any]:
        for doc in docs:
            yield self(doc)


def compile_rules(ruler: Any) -> CompiledRules | None:
    """Compile a spaCy AttributeRuler, or None when a pattern is outside what is supported."""
    try:
        n_keys = len(ruler.attrs)
        # the memo key: what the index look-ups (LOWER, TAG, DEP) and the first-token checks read
        rules, index, scan, key_attrs = [], {a: {} for a in _INDEXED}, [], {"lower", "tag", "dep"}
        for key in range(n_keys):
            _cb, patterns = ruler.matcher.get(str(key))
            offset = ruler.indices[key]
            for pattern in patterns:
                if not pattern or not -len(pattern) <= offset < len(pattern):
                    return None
                checks = [_token_checks(spec) for spec in pattern]
                if any(c is None for c in checks):
                    return None
                r = len(rules)
                rules.append((key, checks, offset, ruler.attrs[key]))
                key_attrs.update(_ID_ATTRS.get(name, name) for name in _read_attrs(pattern[0]))
                where = _index_values(pattern[0])
                if where is None:
                    scan.append(r)
                else:
                    attr, values = where
                    for v in values:
                        index[attr].setdefault(v, []).append(r)
        return CompiledRules(rules, index, scan, sorted(key_attrs))
    except Exception:
        return None


def _read_attrs(spec: dict) -> list[str]:
    """The Token attributes a (supported) token spec's checks read."""
    return [_BOOL_ATTRS.get(attr) or _STRING_ATTRS[attr] for attr in spec]


def _index_values(spec: dict) -> tuple[str, list[str]] | None:
    for attr in _INDEXED:
        value = spec.get(attr)
        if isinstance(value, str):
            return attr, [value]
        if isinstance(value, dict) and set(value) == {"IN"}:
            return attr, [str(v) for v in value["IN"]]
    return None


def _token_checks(spec: dict) -> list[Callable[[Any], bool]] | None:
    """One token spec as a list of checks (all must hold), or None if unsupported."""
    checks: list[Callable[[Any], bool]] = []
    for attr, value in spec.items():
        if attr in _BOOL_ATTRS and isinstance(value, bool):
            name = _BOOL_ATTRS[attr]
            checks.append(lambda t, name=name, value=value: bool(getattr(t, name)) == value)
            continue
        if attr not in _STRING_ATTRS:
            return None
        name = _STRING_ATTRS[attr]
        if isinstance(value, str):
            checks.append(lambda t, name=name, value=value: getattr(t, name) == value)
        elif isinstance(value, dict) and len(value) == 1:
            (op, arg), = value.items()
            if op in ("IN", "NOT_IN") and isinstance(arg, list) and all(isinstance(a, str) for a in arg):
                values = frozenset(arg)
                if op == "IN":
                    checks.append(lambda t, name=name, values=values: getattr(t, name) in values)
                else:
                    checks.append(lambda t, name=name, values=values: getattr(t, name) not in values)
            elif op == "REGEX" and isinstance(arg, str):
                rx = re.compile(arg)
                checks.append(lambda t, name=name, rx=rx: rx.search(getattr(t, name)) is not None)
            else:
                return None
        else:
            return None
    return checks
