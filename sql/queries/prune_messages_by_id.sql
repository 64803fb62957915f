-- Delete the given messages of the given scopes (pruning to `messages_kept`; the ids come from the
-- scope cache). One statement for a whole write unit, however many scopes it pruned.
DELETE FROM messages WHERE list_contains($scope_keys, scope_key) AND list_contains($ids, id);
