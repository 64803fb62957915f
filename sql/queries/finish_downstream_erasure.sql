-- A downstream target confirmed an erasure.
UPDATE downstream_erasures SET status = 'done', finished_at = $finished_at, verification = $verification,
       attempts = attempts + 1, last_error = NULL
WHERE id = $id;
