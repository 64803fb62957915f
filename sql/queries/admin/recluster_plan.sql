-- The re-cluster's plan (memstore/store/recluster.py): memories per user among the rows the pass
-- sorts (each table's rows from its start on: 0 for a full pass, the end of the last sorted run for
-- a tail pass), in the order the re-cluster writes them, so consecutive users can be grouped into
-- slices of bounded size. Users with postings there but no memory (a memory updated in place gets
-- new postings at the end) count 0, so a slice covers their postings too.
SELECT user_id, sum(n) AS n
FROM (
    SELECT user_id, count(*) AS n FROM memories WHERE rowid >= $memories GROUP BY user_id
    UNION ALL
    SELECT DISTINCT user_id, 0 FROM keyword_postings WHERE rowid >= $keyword_postings
    UNION ALL
    SELECT DISTINCT user_id, 0 FROM entity_postings WHERE rowid >= $entity_postings
)
GROUP BY user_id
ORDER BY user_id NULLS LAST;
