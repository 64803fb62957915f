-- The filtered scope of a search: one row per visible memory with what fusion needs
-- (memstore/retrieval/fusion.py implements sql/queries/fuse_scores.sql over these rows).
-- /*WHERE*/ = compiled filters AND visibility (alias m); /*VECTOR*/ = nothing when the vectors come from
-- the scope cache (or semantic is off: even a NULL FLOAT[384] column costs ~2 ms a 1,000-row scope to
-- cross to Arrow), else `, m.embedding AS _vector`; /*RECORD*/ = nothing, or the rest of the memory's
-- columns when search() returns records (one scan, one snapshot: no second read by id).
-- Parameters: the filters', $now (and $as_of), $qtext.
SELECT m.id, m.scope_key, m.doc_len::DOUBLE AS _doc_len,
       epoch_us(coalesce(m.valid_from, m.created_at)) AS _valid_at_us,
       split_part(m.slot, ':', 1) AS _slot_family, m.extraction_run_id AS _episode_key,
       coalesce(m.valid_from <> m.created_at, false) AS _time_stated,
       CASE WHEN m.attributed_to IS NOT NULL AND contains($qtext, ' ' || lower(trim(m.attributed_to)) || ' ')
            THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS _person
       /*VECTOR*/ /*RECORD*/
FROM memories m
WHERE /*WHERE*/;
