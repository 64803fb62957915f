-- The raw model answer of a malformed run (its first 64 KB), so an analyst can see what the model
-- said. It is the model's rendering of the person's messages: erased with the scope like every
-- extraction_runs row, and blanked by the `messages` retention policy like the messages themselves.
ALTER TABLE extraction_runs ADD COLUMN IF NOT EXISTS raw_answer VARCHAR;
