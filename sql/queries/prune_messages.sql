-- Keep only the newest $keep messages of a scope.
DELETE FROM messages
WHERE scope_key = $scope_key AND id IN (
    SELECT id FROM messages WHERE scope_key = $scope_key
    ORDER BY created_at DESC, id DESC OFFSET $keep
);
