-- Usage evals per run, case (task) and condition (never pooled across conditions): how many trials passed, missed,
-- went unsafe or were invalid, and the check the non-passing ones failed on most (the marker's first failing check:
-- a must-land, other-writes or the answer; of checks failed on equally often, the first by name, so the figure never
-- depends on the order the rows were written in).
WITH per_case AS (
    SELECT
        run_id, task, prompt_hash, condition,
        count(*) FILTER (WHERE outcome = 'pass') AS passed,
        count(*) FILTER (WHERE outcome = 'miss') AS missed,
        count(*) FILTER (WHERE outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE outcome = 'invalid') AS invalid,
        count(*) AS trials,
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY run_id, task, prompt_hash, condition
),
failed_checks AS (
    SELECT run_id, task, prompt_hash, condition, failing_check, count(*) AS failures
    FROM {{ ref('stg_usage_trials') }}
    WHERE outcome IN ('miss', 'unsafe') AND failing_check IS NOT NULL
    GROUP BY run_id, task, prompt_hash, condition, failing_check
),
top_check AS (
    SELECT run_id, task, prompt_hash, condition,
           first(failing_check ORDER BY failures DESC, failing_check) AS top_failing_check
    FROM failed_checks
    GROUP BY run_id, task, prompt_hash, condition
)
SELECT per_case.*, top_check.top_failing_check
FROM per_case
LEFT JOIN top_check
    ON top_check.run_id IS NOT DISTINCT FROM per_case.run_id AND top_check.task = per_case.task
    AND top_check.prompt_hash IS NOT DISTINCT FROM per_case.prompt_hash AND top_check.condition = per_case.condition
ORDER BY run_id, task, condition
