-- Revoke: the row goes (a revoked token then answers as an unknown one).
DELETE FROM api_tokens WHERE name = $name RETURNING name;
