"""The bottom layer: the domain model and the rules, with no I/O and no memstore import from above.

- `model.py`: `Message`, `Fact`, `Extraction`, `AddState` (one add in flight), `PreparedAdd`.
- `identity.py` (`Scope`), `ids.py`, `timeutil.py`, `errors.py` (every error class), `config.py`,
  `records.py` (stored rows → mem0-shaped dicts), `checks.py` (argument checks at the edge).
- `rules/`: each rule in one file — `validity.py` (current / superseded / expired, the valid_from
  fallback), `slots.py` (which slot a fact states), `supersession.py` (closing an interval),
  `dedupe.py` (what counts as the same memory), `signals.py` (the search channels and signals).

See ARCHITECTURE.md for the layers.
"""
