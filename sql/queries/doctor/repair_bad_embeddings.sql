-- New embeddings for the memories in the registered table `reembed` (id, embedding).
UPDATE memories m SET embedding = r.embedding FROM reembed r WHERE m.id = r.id;
