-- Pass rate per batch over time for each suite × agent_runner × agent_model × condition series ('*' = all
-- conditions of the batch), with a Wilson 95% interval. grader_boundary marks a batch whose grader version set
-- differs from the previous batch of the same series (by batch_date): numbers on either side were graded
-- differently. task_set_boundary marks one whose set of tasks (id @ promptHash) differs: a new task version, a task
-- added or dropped; numbers on either side measure different things. A series never pools two suites.
WITH per_batch AS (
    SELECT
        batch_id,
        min(batch_date) AS batch_date,
        coalesce(suite, '(none)') AS suite,
        agent_runner,
        agent_model,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        string_agg(DISTINCT grader_version, ',' ORDER BY grader_version) AS grader_versions,
        string_agg(DISTINCT task || '@' || coalesce(prompt_hash, '?'), ','
                   ORDER BY task || '@' || coalesce(prompt_hash, '?')) AS task_set,
        count(DISTINCT task) AS tasks,
        count(*) FILTER (WHERE passed) AS passed,
        count(*) FILTER (WHERE scored) AS valid_scored,
        count(*) FILTER (WHERE NOT valid) AS invalid
    FROM {{ ref('stg_trials') }}
    GROUP BY GROUPING SETS ((batch_id, coalesce(suite, '(none)'), agent_runner, agent_model),
                            (batch_id, coalesce(suite, '(none)'), agent_runner, agent_model, condition))
),
rates AS (
    SELECT *, passed / nullif(valid_scored, 0) AS p, valid_scored::DOUBLE AS n FROM per_batch
)
SELECT
    batch_id, batch_date, suite, agent_runner, agent_model, condition, grader_versions, tasks,
    passed, valid_scored, invalid,
    p AS pass_rate,
    -- greatest/least clamp an exact 0 or 1 bound that floating point puts a hair outside [0, 1]; they skip NULLs,
    -- hence the CASE: no valid scored trial means no interval, not [0, 1]
    {{ wilson_low('p', 'n') }} AS wilson_low,
    {{ wilson_high('p', 'n') }} AS wilson_high,
    -- the first batch of a series has nothing to differ from
    CASE WHEN row_number() OVER series = 1 THEN false
        ELSE grader_versions IS DISTINCT FROM lag(grader_versions) OVER series END AS grader_boundary,
    CASE WHEN row_number() OVER series = 1 THEN false
        ELSE task_set IS DISTINCT FROM lag(task_set) OVER series END AS task_set_boundary,
    task_set
FROM rates
WINDOW series AS (PARTITION BY suite, agent_runner, agent_model, condition ORDER BY batch_date, batch_id)
ORDER BY batch_date, batch_id, suite, agent_runner, agent_model, condition
