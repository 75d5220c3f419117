-- The pass^k curve per run and condition ('*' = all cells of the run), k = 1 .. the largest valid scored count
-- of the group: value = mean, over cells with n >= k, of C(c, k) / C(n, k), the unbiased estimator of the chance
-- that k fresh trials all pass (c = passed, n = valid scored trials); `cells` = how many cells entered the mean.
WITH cells AS (
    SELECT run_id, condition, passed AS c, valid_scored AS n FROM {{ ref('cell_matrix') }} WHERE valid_scored > 0
),
-- Cells come in few shapes (c, n), so each group is counted by shape and the ratio computed once per shape.
shapes AS (
    SELECT
        run_id,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        c, n,
        count(*) AS cells
    FROM cells
    GROUP BY GROUPING SETS ((run_id, c, n), (run_id, condition, c, n))
),
ratios AS (
    SELECT
        c, n, k,
        -- C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i): exact for the small n we have, no factorial overflow
        CASE WHEN c < k THEN 0.0 ELSE list_product([(c - i)::DOUBLE / (n - i) FOR i IN range(k)]) END AS ratio
    FROM (SELECT c, n, unnest(range(1, n + 1)) AS k FROM (SELECT DISTINCT c, n FROM cells))
)
SELECT
    s.run_id, s.condition, r.k,
    sum(s.cells * r.ratio) / sum(s.cells) AS value,
    sum(s.cells)::BIGINT AS cells
FROM shapes AS s
JOIN ratios AS r ON s.c = r.c AND s.n = r.n
GROUP BY s.run_id, s.condition, r.k
ORDER BY s.run_id, s.condition, r.k
