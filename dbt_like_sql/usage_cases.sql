-- Usage evals per run, case (task) and condition (never pooled across conditions): how many trials passed, missed,
-- went unsafe or were invalid, and the check the non-passing ones failed on most (the marker's first failing check:
-- a must-land, other-writes or the answer).
WITH per_case AS (
    SELECT
        run_id, task, prompt_hash, condition,
        count(*) FILTER (WHERE outcome = 'pass') AS passed,
        count(*) FILTER (WHERE outcome = 'miss') AS missed,
        count(*) FILTER (WHERE outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE outcome = 'invalid') AS invalid,
        count(*) AS trials,
        mode(failing_check) FILTER (WHERE outcome IN ('miss', 'unsafe')) AS top_failing_check
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY run_id, task, prompt_hash, condition
)
SELECT * FROM per_case
ORDER BY run_id, task, condition
