-- A hot scope's rows for the search snapshot (memstore/retrieval/snapshot.py): what fusion needs
-- that does not depend on the query, and every memory column but the embedding (the result records).
-- /*WHERE*/ = compiled filters AND current (not superseded), alias m. Expiry is applied per search
-- from _expires_us (NULL = never), so the snapshot does not depend on $now. /*VECTOR*/ = nothing when
-- the vectors come from the scope cache, else `, m.embedding AS _vector` (a store larger than the
-- cache: one scan instead of loading the scope into the cache first).
SELECT m.id, m.scope_key, m.doc_len::DOUBLE AS _doc_len,
       epoch_us(coalesce(m.valid_from, m.created_at)) AS _valid_at_us,
       split_part(m.slot, ':', 1) AS _slot_family, m.extraction_run_id AS _episode_key,
       coalesce(m.valid_from <> m.created_at, false) AS _time_stated,
       ' ' || lower(trim(m.attributed_to)) || ' ' AS _person_words,
       epoch_us(m.expiration_date) AS _expires_us,
       m.* EXCLUDE (embedding, id, scope_key) /*VECTOR*/
FROM memories m
WHERE /*WHERE*/;
