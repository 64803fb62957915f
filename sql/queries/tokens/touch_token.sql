-- Record when a token was last used (never moves back).
UPDATE api_tokens SET last_used_at = greatest(coalesce(last_used_at, $used_at), $used_at)
WHERE name = $name;
