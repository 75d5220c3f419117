-- Performance per run and condition ('*' = all conditions of the run), beside correctness and never blended in:
-- medians over passing valid scored trials only (DuckDB's median averages the two middle values, as the earlier
-- harness did); total_cost_usd sums the cost of valid trials and is NULL when any valid trial lacks a cost
-- (a partial sum would understate); cost_per_success = total_cost_usd ÷ passed.
WITH agg AS (
    SELECT
        run_id,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        count(*) FILTER (WHERE passed) AS passed,
        median(duration_ms) FILTER (WHERE passed) AS median_duration_ms,
        median(turns) FILTER (WHERE passed) AS median_turns,
        median(tool_calls) FILTER (WHERE passed) AS median_tool_calls,
        median(tokens_in) FILTER (WHERE passed) AS median_tokens_in,
        median(tokens_out) FILTER (WHERE passed) AS median_tokens_out,
        CASE WHEN count(*) FILTER (WHERE valid AND cost_usd IS NULL) = 0
            THEN sum(cost_usd) FILTER (WHERE valid) END AS total_cost_usd
    FROM {{ ref('stg_trials') }}
    GROUP BY GROUPING SETS ((run_id), (run_id, condition))
)
SELECT *, total_cost_usd / nullif(passed, 0) AS cost_per_success
FROM agg
ORDER BY run_id, condition
