UPDATE memories
SET memory = $memory, hash = $hash, embedding = (SELECT embedding FROM qvec), doc_len = $doc_len,
    metadata = $metadata, expiration_date = $expiration_date, updated_at = $now
WHERE id = $id;
