SELECT 1 FROM api_tokens WHERE name = $name;
