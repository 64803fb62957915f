-- Of the given ids, those this store has seen: still stored, or named by history (deleted since).
-- import_mem0 skips them, so a re-run imports only what is new.
SELECT id FROM memories WHERE list_contains($ids, id)
UNION
SELECT memory_id FROM history WHERE list_contains($ids, memory_id);
