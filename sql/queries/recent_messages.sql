-- The last N messages of one scope, oldest first (context for the extractor).
SELECT id, role, name, content, created_at
FROM (
    SELECT * FROM messages WHERE scope_key = $scope_key ORDER BY created_at DESC, id DESC LIMIT $n
)
ORDER BY created_at, id;
