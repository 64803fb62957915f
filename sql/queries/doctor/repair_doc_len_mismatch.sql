UPDATE memories m SET doc_len = coalesce((SELECT sum(tf) FROM keyword_postings k WHERE k.memory_id = m.id), 0)
WHERE doc_len <> coalesce((SELECT sum(tf) FROM keyword_postings k WHERE k.memory_id = m.id), 0);
