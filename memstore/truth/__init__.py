"""What used to be true: the truth rules in one room.

- `slots`: which subject + slot a short fact states ("Alice moved to Seattle" → alice / lives_in /
  seattle), plans a later state fulfils, negation, and the question → slot map the search uses.
- `supersede_by_slot`: the write step that closes the fact a new one replaces on the same slot
  (and cuts the interval a late fact falls in).
- `resolve`: a person's decision on a contradiction (keep / supersede / dismiss).
- `expire`: purge memories whose expiration_date has passed (history keeps an EXPIRE event).

The SQL they run lives in `sql/queries/` (supersede_memories, narrow_validity,
slot_history_memories, expired_memories, purge_memories) and the `contradictions` view.
"""
