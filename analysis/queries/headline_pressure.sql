-- Headline: the serving-engine line at the longest sequence length each run measured, and what stopped it.
-- On a CPU the ceiling is a safety limit the run chose, so the count shows the mechanism, not a capacity:
-- `demonstration` says so (the overview files such headlines apart from the findings).
WITH longest AS (
  SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq_len DESC) AS rn
  FROM concurrent_capacity WHERE bytes_per_request IS NOT NULL
)
SELECT l.run_id,
       format('{} at {} on {}: {:,} request{} of {} tokens admitted before the {}; within a {} ceiling{} the serving engine''s rule (not a measurement) gives a KV capacity of {:,} tokens, a max concurrency of {:,.1f} requests.',
              r.model, r.dtype, r.device_name, l.max_requests_measured,
              CASE WHEN l.max_requests_measured = 1 THEN '' ELSE 's' END, l.seq_len,
              CASE l.stop_reason WHEN 'cap' THEN 'request cap' WHEN 'time' THEN 'time budget'
                                 WHEN 'ceiling' THEN 'memory ceiling' WHEN 'oom' THEN 'out-of-memory error'
                                 ELSE l.stop_reason END,
              bytes3(l.ceiling_bytes),
              CASE WHEN r.device_kind = 'cuda' THEN format(' ({:.0f}% of free device memory)', 100 * l.ceiling_fraction)
                   ELSE ' (a CPU safety limit, not the RAM size)' END,
              l.capacity_tokens, l.max_concurrency) AS finding,
       -- the headline number is what was measured (requests admitted), never the engine rule's figure
       l.max_requests_measured::DOUBLE AS value,
       CASE WHEN l.max_requests_measured = 1 THEN 'request admitted' ELSE 'requests admitted' END AS unit, 'pressure.html' AS page,
       CASE WHEN r.device_kind <> 'cuda' THEN 'the ceiling is a CPU safety limit chosen by the run, not a device''s memory' END AS demonstration
FROM longest l JOIN runs r USING (run_id)
WHERE l.rn = 1
ORDER BY l.run_id;
