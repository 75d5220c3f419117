-- Static adoption: valid trials of source-imports tasks (scoredForPassRate false, graded on typecheck + required
-- imports only) per run, task and condition; they never enter the headline pass rate.
SELECT
    run_id, task, condition,
    count(*) AS valid,
    count(*) FILTER (WHERE contract_pass) AS passed
FROM {{ ref('stg_trials') }}
WHERE valid AND NOT scored_for_pass_rate
GROUP BY run_id, task, condition
ORDER BY run_id, task, condition
