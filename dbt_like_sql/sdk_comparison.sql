-- SDKs on one contract: two suites compared task by task where they share the assignment, and pooled over those
-- tasks, per agent_runner × agent_model × condition (never pooled across agents or models).
-- task_slug is the task id without its suite and version prefix (`py-v4-01-basic-tool-server` and
-- `v5-01-basic-tool-server` are both `basic-tool-server`); a suite's side of a slug is its newest task version
-- only (the task @ promptHash of the latest batch that ran the slug), so an old contract never pools with a new one.
-- Rows: one per suite pair (suite_a < suite_b by name) × agent × condition × shared slug, plus task_slug '*', the
-- pool over the slugs with valid scored trials on both sides. Each side: passed / valid scored trials with a Wilson
-- 95% interval, all its trials and its invalid ones (outside every rate); delta = rate_b − rate_a with Newcombe's
-- interval. recorded_sessions marks the replay agent's rows: canned sessions, not an agent's work.
WITH rows_ AS (
    SELECT *, regexp_replace(task, '^(py-)?v[0-9]+-[0-9]+-', '') AS task_slug
    FROM {{ ref('stg_trials') }}
    WHERE suite IS NOT NULL
),
versions AS (
    SELECT suite, task_slug, task, prompt_hash,
           row_number() OVER (PARTITION BY suite, task_slug
                              ORDER BY max(batch_date) DESC, max(batch_id) DESC, task DESC) AS newest
    FROM rows_
    GROUP BY suite, task_slug, task, prompt_hash
),
per_task AS (
    SELECT r.suite, r.task_slug, min(r.task) AS task, r.agent_runner, coalesce(r.agent_model, '-') AS agent_model,
           r.condition,
           count(*) FILTER (WHERE r.passed) AS passed,
           count(*) FILTER (WHERE r.scored) AS valid_scored,
           count(*) AS trials,
           count(*) FILTER (WHERE NOT r.valid) AS invalid
    FROM rows_ AS r
    JOIN versions AS v
      ON v.newest = 1 AND v.suite = r.suite AND v.task_slug = r.task_slug AND v.task = r.task
     AND v.prompt_hash IS NOT DISTINCT FROM r.prompt_hash
    GROUP BY r.suite, r.task_slug, r.agent_runner, coalesce(r.agent_model, '-'), r.condition
),
pairs AS (
    SELECT a.suite AS suite_a, b.suite AS suite_b, a.agent_runner, a.agent_model, a.condition, a.task_slug,
           a.task AS task_a, b.task AS task_b,
           a.passed AS passed_a, a.valid_scored AS valid_a, a.trials AS trials_a, a.invalid AS invalid_a,
           b.passed AS passed_b, b.valid_scored AS valid_b, b.trials AS trials_b, b.invalid AS invalid_b,
           a.valid_scored > 0 AND b.valid_scored > 0 AS paired
    FROM per_task AS a
    JOIN per_task AS b
      ON a.suite < b.suite AND a.task_slug = b.task_slug AND a.agent_runner = b.agent_runner
     AND a.agent_model = b.agent_model AND a.condition = b.condition
),
grouped AS (
    SELECT suite_a, suite_b, agent_runner, agent_model, condition, task_slug, task_a, task_b,
           CASE WHEN paired THEN 1 ELSE 0 END AS paired_tasks,
           passed_a, valid_a, trials_a, invalid_a, passed_b, valid_b, trials_b, invalid_b
    FROM pairs
    UNION ALL
    SELECT suite_a, suite_b, agent_runner, agent_model, condition, '*', NULL, NULL, count(*),
           sum(passed_a), sum(valid_a), sum(trials_a), sum(invalid_a),
           sum(passed_b), sum(valid_b), sum(trials_b), sum(invalid_b)
    FROM pairs
    WHERE paired
    GROUP BY suite_a, suite_b, agent_runner, agent_model, condition
),
rates AS (
    SELECT *,
           passed_a / nullif(valid_a, 0) AS p_a, valid_a::DOUBLE AS n_a,
           passed_b / nullif(valid_b, 0) AS p_b, valid_b::DOUBLE AS n_b
    FROM grouped
),
bounds AS (
    SELECT *,
           {{ wilson_low('p_a', 'n_a') }} AS low_a, {{ wilson_high('p_a', 'n_a') }} AS high_a,
           {{ wilson_low('p_b', 'n_b') }} AS low_b, {{ wilson_high('p_b', 'n_b') }} AS high_b
    FROM rates
)
SELECT
    suite_a, suite_b, agent_runner, agent_model, condition, task_slug, task_a, task_b, paired_tasks,
    passed_a::BIGINT AS passed_a, valid_a::BIGINT AS valid_scored_a, trials_a::BIGINT AS trials_a,
    invalid_a::BIGINT AS invalid_a, p_a AS pass_rate_a, low_a AS wilson_low_a, high_a AS wilson_high_a,
    passed_b::BIGINT AS passed_b, valid_b::BIGINT AS valid_scored_b, trials_b::BIGINT AS trials_b,
    invalid_b::BIGINT AS invalid_b, p_b AS pass_rate_b, low_b AS wilson_low_b, high_b AS wilson_high_b,
    p_b - p_a AS delta,
    {{ newcombe_low('p_a', 'low_a', 'high_a', 'p_b', 'low_b', 'high_b') }} AS newcombe_low,
    {{ newcombe_high('p_a', 'low_a', 'high_a', 'p_b', 'low_b', 'high_b') }} AS newcombe_high,
    agent_runner = 'replay' AS recorded_sessions
FROM bounds
ORDER BY suite_a, suite_b, agent_runner, agent_model, condition, task_slug = '*' DESC, task_slug
