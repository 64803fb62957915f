-- Where the sorted part of a table ends, for a store clustered by a version that recorded no
-- run ends (memstore/store/cluster_runs.py sorted_end): one past the rows sorted by user before the
-- unsorted tail. A descent is a row whose user sorts before the previous row's (NULL last, as the
-- re-cluster writes them). In a sorted run descents are rare (adds that landed between two slices
-- of the pass that wrote it); in a tail of adds they come every few rows. So the sorted part ends
-- where the last stretch of more than $gap rows without a descent ends, at the first descent after
-- it (rows before it that did not descend sort after the run's last user: they are in order).
-- The whole table when its last $gap rows hold no descent; 0 when no stretch is that long.
WITH steps AS (
    SELECT rowid AS r, user_id AS u,
           lag(user_id) OVER (ORDER BY rowid) AS p,
           lag(rowid) OVER (ORDER BY rowid) AS pr
    FROM /*TABLE*/
),
descents AS (
    SELECT r FROM steps
    WHERE pr IS NOT NULL AND ((p IS NULL AND u IS NOT NULL) OR u < p)
),
gaps AS (
    SELECT r, r - coalesce(lag(r) OVER (ORDER BY r), -1) AS gap FROM descents
),
bounds AS (
    SELECT coalesce((SELECT max(rowid) + 1 FROM /*TABLE*/), 0) AS table_end,
           (SELECT max(r) FROM descents) AS last_descent,
           (SELECT max(r) FROM gaps WHERE gap > $gap) AS long_end
)
SELECT CASE
    WHEN last_descent IS NULL OR table_end - last_descent > $gap THEN table_end
    WHEN long_end IS NULL THEN 0
    ELSE long_end
END
FROM bounds;
