-- Trials per run by detected SDK path (a recorded fact, worth nothing), all trials with the valid / invalid split.
SELECT
    run_id, sdk_path,
    count(*) AS trials,
    count(*) FILTER (WHERE valid) AS valid,
    count(*) FILTER (WHERE NOT valid) AS invalid
FROM {{ ref('stg_trials') }}
GROUP BY run_id, sdk_path
ORDER BY run_id, trials DESC, sdk_path
