-- Failed valid scored trials per run by failure code (the first failing contract stage).
SELECT run_id, failure_code, count(*) AS failed
FROM {{ ref('stg_trials') }}
WHERE scored AND NOT contract_pass
GROUP BY run_id, failure_code
ORDER BY run_id, failed DESC, failure_code
