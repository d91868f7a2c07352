-- Claims ledger, compaction: the seed's GB/s for small and large workloads and its best case as a share of
-- the RTX 2070's peak. Bandwidths are properties of the device, so on other hardware the numbers "differ by
-- hardware"; the shares of peak / roof test whether 14.9% was a limit of compaction or of the seed's kernel.
-- The seed's size split is read as live KV bytes gathered (kv_bytes; bytes_moved counts them twice).
-- Every pct_of_roof is against the copy roof of the same size (schema 3; older rows say roof_basis).
-- Rows above 105% of their roof are measurement errors (over_roof) and take part in nothing here. Claims
-- about DRAM bandwidth ("large", "best case") use only sizes moving at least 4x the last-level cache
-- (dram_sized): a 16 MiB gather beside a 60 MB L2 measures the cache. Rows older than schema 3 have no
-- dram_sized and keep the seed's > 10 MB split. The best case is the best single-launch method (batched
-- or triton), so the ledger shows what compaction can reach, not one kernel's limit.
WITH c AS (SELECT k.*, r.device_name, coalesce(k.dram_sized, k.kv_bytes > 10e6) AS dram
           FROM compaction k JOIN runs r USING (run_id) WHERE NOT coalesce(k.over_roof, false)),
g AS (
  SELECT run_id, any_value(device_name) AS device_name,
         any_value(device_name) ILIKE '%RTX 2070%' AS same_gpu,
         median(gbs) FILTER (WHERE method = 'naive' AND kv_bytes < 5e6) AS naive_small,
         median(gbs) FILTER (WHERE method = 'batched' AND kv_bytes < 5e6) AS batched_small,
         median(pct_of_roof) FILTER (WHERE method = 'naive' AND kv_bytes < 5e6) AS naive_small_roof,
         median(gbs) FILTER (WHERE method = 'naive' AND kv_bytes > 10e6 AND dram) AS naive_large,
         median(gbs) FILTER (WHERE method = 'batched' AND kv_bytes > 10e6 AND dram) AS batched_large,
         median(pct_of_roof) FILTER (WHERE method = 'naive' AND kv_bytes > 10e6 AND dram) AS naive_large_roof,
         max(gbs) FILTER (WHERE method = 'naive' AND dram) AS naive_best,
         max(gbs) FILTER (WHERE method IN ('batched', 'triton') AND dram) AS batched_best,
         arg_max(method, gbs) FILTER (WHERE method IN ('batched', 'triton') AND dram) AS best_method,
         max(pct_of_peak) FILTER (WHERE method = 'naive' AND dram) AS naive_best_peak,
         max(pct_of_peak) FILTER (WHERE method IN ('batched', 'triton') AND dram) AS batched_best_peak,
         max(pct_of_roof) FILTER (WHERE method IN ('batched', 'triton') AND dram) AS batched_best_roof,
         any_value(peak_gbs) AS peak_gbs,
         coalesce(any_value(roof_basis), 'single-size copy roof') AS basis
  FROM c GROUP BY run_id
),
claims AS (
  SELECT 'compact_small_5mb' AS claim_id, run_id,
         printf('naive %.1f GB/s (%.0f%% of the %s), batched %s, under 5 MB on %s',
                naive_small, 100 * naive_small_roof, basis,
                coalesce(printf('%.1f GB/s', batched_small), 'flagged above its roof (measurement error)'),
                device_name) AS measured_value,
         CASE WHEN NOT same_gpu THEN $differs_by_hardware
              WHEN abs(naive_small / 19.2 - 1) <= 0.25 THEN $confirmed ELSE $refuted END AS verdict,
         CASE WHEN batched_small >= 1.5 * naive_small
              THEN printf('one launch instead of one per layer and tensor is %.1fx faster here: the small regime is launch-bound, as the profiler write-up said', batched_small / naive_small)
              ELSE 'batching the launches gains little at small sizes on this device: not launch-bound here' END AS reasoning
  FROM g WHERE naive_small IS NOT NULL
  UNION ALL
  SELECT 'compact_large_10mb', run_id,
         printf('naive %.1f GB/s (%.0f%% of the %s), batched %s, over 10 MB and at least 4x the last-level cache on %s',
                naive_large, 100 * naive_large_roof, basis,
                coalesce(printf('%.1f GB/s', batched_large), 'flagged above its roof (measurement error)'), device_name),
         CASE WHEN NOT same_gpu THEN $differs_by_hardware
              WHEN abs(naive_large / 52.5 - 1) <= 0.25 THEN $confirmed ELSE $refuted END,
         coalesce(printf('GB/s is a property of the device; large workloads run %.1fx the small ones with the naive method here (the profiler write-up: 2.7x)',
                         naive_large / naive_small), 'GB/s is a property of the device')
  FROM g WHERE naive_large IS NOT NULL
  UNION ALL
  SELECT 'compact_best_pct_peak', run_id,
         printf('best single-launch gather (%s) %.1f GB/s = %s; naive best %.1f GB/s (DRAM-sized workloads)',
                best_method, batched_best,
                CASE WHEN peak_gbs IS NULL THEN printf('%.0f%% of the %s (no theoretical peak on a CPU)', 100 * batched_best_roof, basis)
                     ELSE printf('%.1f%% of peak, %.0f%% of the %s', 100 * batched_best_peak, 100 * batched_best_roof, basis) END,
                naive_best),
         -- "differs by hardware" only for another GPU: on the seed's own card 14.9% is checked like any number.
         CASE WHEN coalesce(batched_best_peak, batched_best_roof) >= 0.5 THEN $refuted
              WHEN same_gpu AND abs(batched_best_peak / 0.149 - 1) <= 0.25 THEN $confirmed
              WHEN same_gpu THEN $refuted
              ELSE $differs_by_hardware END,
         CASE WHEN coalesce(batched_best_peak, batched_best_roof) >= 0.5
              THEN 'a single batched gather reaches over half of this device''s ceiling: the profiler write-up''s 14.9% measured its kernel, not a limit of compaction'
              WHEN same_gpu AND abs(batched_best_peak / 0.149 - 1) <= 0.25
              THEN 'on the profiler write-up''s own GPU the best gather also stays near 15% of the theoretical peak'
              ELSE 'compaction stays well below this device''s ceiling even batched' END
  FROM g WHERE batched_best IS NOT NULL
),
text AS (
  SELECT * FROM (VALUES
    ('compact_small_5mb', 'Small workloads (<5MB): 19.2 GB/s (kernel-launch-bound)', '19.2 GB/s'),
    ('compact_large_10mb', 'Large workloads (>10MB): 52.5 GB/s (2.7x better)', '52.5 GB/s'),
    ('compact_best_pct_peak', 'Best case (4x512 tok): 66.9 GB/s (14.9% of RTX 2070 theoretical)', '66.9 GB/s = 14.9% of peak')
  ) AS s(claim_id, claim, seed_value)
),
unmeasured AS (
  SELECT claim_id, 'no run in this DB has compaction measurements of this size' AS reasoning FROM text t
  WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = t.claim_id)
),
{include:_claim_ledger}
SELECT claim_id, 'profiler seed' AS source, claim, seed_value, 'RTX 2070 (GPT-2, float16)' AS seed_hardware,
       'measurement' AS basis, true AS claim_on_gpu, run_id::INTEGER AS run_id, measured_value, verdict, reasoning
FROM ledger
ORDER BY claim_id, run_id;
