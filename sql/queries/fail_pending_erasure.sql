-- An attempt to finish an erasure failed: count it and keep why (no personal content).
UPDATE pending_erasures SET attempts = attempts + 1, last_error = $error WHERE id = $id;
