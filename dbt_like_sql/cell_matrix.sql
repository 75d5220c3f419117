-- Task × condition cells of each run with passed / valid scored / all trials / invalid, for scored tasks only.
-- A task counts as unscored (source-imports, reported in static_adoption) in a run when any of its valid trials
-- there is unscored. Invalid trials are no evidence either way (imported infra failures carry
-- scoredForPassRate false), so a cell holding only invalid trials still appears, with valid_scored 0.
WITH cells AS (
    SELECT
        run_id, task, condition,
        count(*) FILTER (WHERE passed) AS passed,
        count(*) FILTER (WHERE scored) AS valid_scored,
        count(*) AS trials,
        count(*) FILTER (WHERE NOT valid) AS invalid,
        bool_or(valid AND NOT scored_for_pass_rate) AS has_unscored
    FROM {{ ref('stg_trials') }}
    GROUP BY run_id, task, condition
),
unscored_tasks AS (
    SELECT DISTINCT run_id, task FROM cells WHERE has_unscored
)
-- No ORDER BY: this is the one large model (one row per cell of every run), the sort would cost a third of its
-- build time, and its readers filter by run and sort anyway.
SELECT c.run_id, c.task, c.condition, c.passed, c.valid_scored, c.trials, c.invalid
FROM cells AS c
-- IS NOT DISTINCT FROM: trials recorded without a run id still form one run here, as in every other model
ANTI JOIN unscored_tasks AS u ON c.run_id IS NOT DISTINCT FROM u.run_id AND c.task = u.task
