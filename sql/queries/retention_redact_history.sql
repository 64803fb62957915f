-- Apply history-text retention: events and times stay, their text goes (ids in `due`).
UPDATE history SET old_memory = NULL, new_memory = NULL WHERE id IN (SELECT id FROM due);
