-- pass^k per run and condition ('*' = all cells of the run). Cells with no valid scored trial carry no
-- information and are left out. k = the smallest valid scored trial count of the remaining cells; a cell is
-- all-pass when every valid scored trial of it passed; pass_k = all_pass_cells ÷ cells. `reported` is true only
-- when every counted cell has at least 2 valid scored trials (the seed reports pass^k only then).
SELECT
    run_id,
    CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
    count(*) FILTER (WHERE valid_scored > 0) AS cells,
    min(valid_scored) FILTER (WHERE valid_scored > 0) AS k,
    count(*) FILTER (WHERE valid_scored > 0 AND passed = valid_scored) AS all_pass_cells,
    count(*) FILTER (WHERE valid_scored > 0 AND passed = valid_scored)
        / nullif(count(*) FILTER (WHERE valid_scored > 0), 0) AS pass_k,
    coalesce(min(valid_scored) FILTER (WHERE valid_scored > 0) >= 2, false) AS reported
FROM {{ ref('cell_matrix') }}
GROUP BY GROUPING SETS ((run_id), (run_id, condition))
ORDER BY run_id, condition
