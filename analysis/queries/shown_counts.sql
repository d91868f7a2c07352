-- How much the DB holds against what analysis/runs.py shows: runs, configurations, audits, replays.
SELECT (SELECT count(*) FROM runs) AS n_runs,
       (SELECT count(DISTINCT (coalesce(device_name, ''), coalesce(model, ''), coalesce(dtype, ''))) FROM runs)
         AS n_configs,
       (SELECT count(DISTINCT (coalesce(device_name, ''), coalesce(model, ''), coalesce(dtype, '')))
          FROM runs WHERE run_id IN (SELECT run_id FROM _shown_runs)) AS n_configs_shown,
       (SELECT count(*) FROM audits) AS n_audits,
       (SELECT count(*) FROM _shown_audits) AS n_audits_shown,
       (SELECT count(*) FROM replays) AS n_replays,
       (SELECT count(*) FROM _shown_replays) AS n_replays_shown
