-- Which of the candidate source messages in `candidates` (conversation_id, message_key) are already
-- stored for this scope and format (ingest idempotency).
SELECT c.conversation_id, c.message_key
FROM candidates c
JOIN ingest_log l
  ON l.scope_key = $scope_key AND l.source_format = $source_format
 AND l.conversation_id = c.conversation_id AND l.message_key = c.message_key;
