-- The messages that add() stored (not those read from a chat export), per scope, oldest first:
-- the scope cache knows which ones pruning to `messages_kept` removes without a sorting DELETE.
-- $scope_key NULL reads every scope (the first load of a small store).
SELECT scope_key, id, created_at
FROM messages
WHERE source_conversation IS NULL AND ($scope_key IS NULL OR scope_key = $scope_key)
ORDER BY scope_key, created_at, id;
