-- memories and entities carry no PRIMARY KEY (see 001_core.sql): the write path keeps ids unique,
-- so the doctor checks it. Two memories with one id make get/update/delete ambiguous.
SELECT 'memories' AS "table", id AS row_id, count(*) || ' rows share this id' AS detail
FROM memories GROUP BY id HAVING count(*) > 1
UNION ALL
SELECT 'entities', id, count(*) || ' rows share this id (' || min(name) || ')'
FROM entities GROUP BY id HAVING count(*) > 1;
