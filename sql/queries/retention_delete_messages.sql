-- Apply message retention to the ids in the registered table `due` (id).
DELETE FROM messages WHERE id IN (SELECT id FROM due);
