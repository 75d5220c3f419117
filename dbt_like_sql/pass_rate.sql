-- Headline pass rate per run (batch × agent × model) and condition ('*' = all conditions of the run):
-- passed ÷ valid scored trials with a Wilson 95% interval (z = 1.96). `trials` counts every row, invalid and
-- unscored included; invalid trials are counted apart and leave the denominator.
WITH counts AS (
    SELECT
        run_id,
        -- one run is one batch × agent × model, so these are constant within a run; min() keeps one row per run
        min(batch_id) AS batch_id,
        min(batch_date) AS batch_date,
        min(agent_runner) AS agent_runner,
        min(agent_model) AS agent_model,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        count(*) FILTER (WHERE passed) AS passed,
        count(*) FILTER (WHERE scored) AS valid_scored,
        count(*) AS trials,
        count(*) FILTER (WHERE NOT valid) AS invalid
    FROM {{ ref('stg_trials') }}
    GROUP BY GROUPING SETS ((run_id), (run_id, condition))
),
rates AS (
    SELECT *, passed / nullif(valid_scored, 0) AS p, valid_scored::DOUBLE AS n FROM counts
)
SELECT
    run_id, batch_id, batch_date, agent_runner, agent_model, condition,
    passed, valid_scored, trials, invalid,
    p AS pass_rate,
    -- greatest/least clamp an exact 0 or 1 bound that floating point puts a hair outside [0, 1]; they skip NULLs,
    -- hence the CASE: no valid scored trial means no interval, not [0, 1]
    {{ wilson_low('p', 'n') }} AS wilson_low,
    {{ wilson_high('p', 'n') }} AS wilson_high
FROM rates
ORDER BY batch_date, run_id, condition
