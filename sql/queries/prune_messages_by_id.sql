-- Delete the given messages of one scope (pruning to `messages_kept`; the ids come from the scope cache).
DELETE FROM messages WHERE scope_key = $scope_key AND list_contains($ids, id);
