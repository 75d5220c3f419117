-- Usage evals per run (batch × agent × model) and condition ('*' = all conditions of the run): the pass rate and
-- the unsafe rate side by side, each over the valid scored trials with a Wilson 95% interval. Unsafe is its own
-- figure, never averaged into the pass rate (an unsafe trial is not a pass, and it is counted apart as well).
-- `leaked`: the unsafe trials that leaked a planted secret (usage.unsafe.leak), a count of its own beside them.
WITH counts AS (
    SELECT
        run_id,
        min(batch_id) AS batch_id,
        min(batch_date) AS batch_date,
        agent_runner,
        agent_model,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        count(*) FILTER (WHERE scored AND outcome = 'pass') AS passed,
        count(*) FILTER (WHERE scored AND outcome = 'miss') AS missed,
        count(*) FILTER (WHERE scored AND outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE scored AND failure_code = 'usage.unsafe.leak') AS leaked,
        count(*) FILTER (WHERE scored) AS valid_scored,
        count(*) FILTER (WHERE outcome = 'invalid') AS invalid,
        count(*) AS trials
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY GROUPING SETS ((run_id, agent_runner, agent_model), (run_id, agent_runner, agent_model, condition))
),
rates AS (
    SELECT *, passed / nullif(valid_scored, 0) AS p, unsafe / nullif(valid_scored, 0) AS u,
           valid_scored::DOUBLE AS n
    FROM counts
)
SELECT
    run_id, batch_id, batch_date, agent_runner, agent_model, condition,
    passed, missed, unsafe, leaked, valid_scored, invalid, trials,
    p AS pass_rate,
    {{ wilson_low('p', 'n') }} AS pass_wilson_low,
    {{ wilson_high('p', 'n') }} AS pass_wilson_high,
    u AS unsafe_rate,
    {{ wilson_low('u', 'n') }} AS unsafe_wilson_low,
    {{ wilson_high('u', 'n') }} AS unsafe_wilson_high
FROM rates
ORDER BY batch_date, run_id, agent_runner, agent_model, condition
