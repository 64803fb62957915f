-- An attempt to finish a downstream erasure failed (the target unreachable, ...): it stays pending.
UPDATE downstream_erasures SET attempts = attempts + 1, last_error = $error WHERE id = $id;
