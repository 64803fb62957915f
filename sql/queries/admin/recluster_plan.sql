-- The re-cluster's plan (memstore/store/recluster.py): memories per user, in the order the
-- re-cluster writes them, so consecutive users can be grouped into slices of bounded size.
SELECT user_id, count(*) AS n
FROM memories
GROUP BY user_id
ORDER BY user_id NULLS LAST;
