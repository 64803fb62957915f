-- Keep only the newest $keep messages of a scope that came through add(). Messages read from a chat
-- export by ingest (source_conversation set) are kept: memories cite them as their provenance.
DELETE FROM messages
WHERE scope_key = $scope_key AND id IN (
    SELECT id FROM messages WHERE scope_key = $scope_key AND source_conversation IS NULL
    ORDER BY created_at DESC, id DESC OFFSET $keep
);
