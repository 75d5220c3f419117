-- Usage pass^k per run (batch × agent × model) and condition, per case (task) and over all cases of the run
-- (task '*'; condition '*' = all conditions). A cell is a case × condition of one agent and model, over its valid
-- scored trials; infra (invalid) trials leave it and are only counted beside. Defined as pass_k.sql does for build
-- tasks: k = the smallest valid scored count of the group's cells; a cell is all-pass when every valid scored trial
-- passed; pass_k = all_pass_cases ÷ cases; pass_k_estimate = the mean over the cells of C(c, k) / C(n, k), the
-- unbiased chance that k fresh trials all pass (a case row uses its run × condition's k, so the case rows average to
-- the '*' row). Unsafe trials are valid trials that did not pass: they are in n (every denominator) and never in c,
-- so a cell with one is never all-pass; `unsafe` counts them apart, beside `missed`. `reported` is true only when
-- k >= 2.
WITH cells AS (
    SELECT
        run_id, agent_runner, agent_model, condition, task,
        count(*) FILTER (WHERE scored AND outcome = 'pass') AS c,
        count(*) FILTER (WHERE scored) AS n,
        count(*) FILTER (WHERE scored AND outcome = 'miss') AS missed,
        count(*) FILTER (WHERE scored AND outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE outcome = 'invalid') AS invalid
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY run_id, agent_runner, agent_model, condition, task
),
with_k AS (
    SELECT
        *,
        -- min skips NULLs: a cell with no valid scored trial (n = 0) never sets k
        min(CASE WHEN n > 0 THEN n END) OVER (PARTITION BY run_id, agent_runner, agent_model, condition) AS k_condition,
        min(CASE WHEN n > 0 THEN n END) OVER (PARTITION BY run_id, agent_runner, agent_model) AS k_run
    FROM cells
),
ratios AS (
    SELECT
        *,
        -- C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i), as pass_k_curve.sql computes it; NULL for a cell without evidence
        CASE WHEN n = 0 THEN NULL WHEN c < k_condition THEN 0.0
             ELSE list_product([(c - i)::DOUBLE / (n - i) FOR i IN range(k_condition)]) END AS ratio_condition,
        CASE WHEN n = 0 THEN NULL WHEN c < k_run THEN 0.0
             ELSE list_product([(c - i)::DOUBLE / (n - i) FOR i IN range(k_run)]) END AS ratio_run
    FROM with_k
)
SELECT
    run_id, agent_runner, agent_model,
    CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
    CASE WHEN grouping(task) = 1 THEN '*' ELSE task END AS task,
    count(*) FILTER (WHERE n > 0) AS cases,
    -- k_condition and k_run are constant within their groups: any() picks the group's one value
    CASE WHEN grouping(condition) = 1 THEN any_value(k_run) ELSE any_value(k_condition) END AS k,
    count(*) FILTER (WHERE n > 0 AND c = n) AS all_pass_cases,
    count(*) FILTER (WHERE n > 0 AND c = n) / nullif(count(*) FILTER (WHERE n > 0), 0) AS pass_k,
    CASE WHEN grouping(condition) = 1 THEN avg(ratio_run) ELSE avg(ratio_condition) END AS pass_k_estimate,
    sum(c)::BIGINT AS passed,
    sum(missed)::BIGINT AS missed,
    sum(unsafe)::BIGINT AS unsafe,
    sum(n)::BIGINT AS valid_scored,
    sum(invalid)::BIGINT AS invalid,
    coalesce(CASE WHEN grouping(condition) = 1 THEN any_value(k_run) ELSE any_value(k_condition) END >= 2, false)
        AS reported
FROM ratios
GROUP BY GROUPING SETS ((run_id, agent_runner, agent_model),
                        (run_id, agent_runner, agent_model, condition),
                        (run_id, agent_runner, agent_model, condition, task))
ORDER BY run_id, agent_runner, agent_model, condition, task
