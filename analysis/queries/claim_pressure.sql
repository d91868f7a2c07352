-- Claims ledger, pressure: the seed's concurrency figures for GPT-2 on an 8 GB RTX 2070 (36,864 B/token at
-- float16, so 18 MiB per 512-token request). Its "MB" are MiB (882 = 49 x 18). Arithmetic rows (run_id NULL)
-- check the seed's numbers against each other exactly; run rows use each run's measured bytes per request,
-- scaled to 2-byte elements where the run used another dtype (element size is exact, not a model).
WITH cap AS (
  SELECT c.*, r.model, r.dtype, r.device_kind, r.device_name, r.gpu_memory_bytes,
         c.bytes_per_request * 2 // c.dtype_bytes AS bpr_16bit
  FROM concurrent_capacity c JOIN runs r USING (run_id)
  WHERE c.bytes_per_request IS NOT NULL
),
g512 AS (SELECT * FROM cap WHERE model = 'gpt2' AND seq_len = 512),
g256 AS (SELECT * FROM cap WHERE model = 'gpt2' AND seq_len = 256),
seed_math AS (
  SELECT 36864::BIGINT AS bpt, 512 * 36864::BIGINT AS bpr512,
         floor(7.5 * 2 ^ 30 / (512 * 36864))::BIGINT AS max_gib, floor(7.5e9 / (512 * 36864))::BIGINT AS max_gb,
         414 * 512 * 36864::BIGINT AS free_for_414
),
claims AS (
  -- 1. 882 MB for 49 requests of 512 tokens: exact arithmetic, then each run's measured request size.
  SELECT 'pressure-49x512-bytes' AS claim_id, 1 AS ord, NULL::INTEGER AS run_id,
         format('49 x 512 x 36,864 B = {:,} B = {:.1f} MiB ({:.1f} MB)', 49 * bpr512, 49 * bpr512 / 2 ^ 20, 49 * bpr512 / 1e6) AS measured_value,
         CASE WHEN 49 * bpr512 = 882 * 2 ^ 20 THEN $confirmed ELSE $refuted END AS verdict,
         'arithmetic, checked exactly: 882 is MiB (2^20 B); in SI units it is 924.8 MB' AS reasoning
  FROM seed_math
  UNION ALL
  SELECT 'pressure-49x512-bytes', 1, run_id,
         format('{:,} B per 512-token request at {} -> 49 requests = {:,} B at 2 B/element', bytes_per_request, dtype, 49 * bpr_16bit),
         CASE WHEN 49 * bpr_16bit = 882 * 2 ^ 20 THEN $confirmed ELSE $refuted END,
         CASE WHEN 49 * bpr_16bit = 882 * 2 ^ 20
              THEN format('the cache tensors of each admitted request hold exactly 18 MiB at 2 B/element{}', CASE WHEN dtype_bytes <> 2 THEN format(' (at this run''s {} B/element: {} each, {} for 49)', dtype_bytes, bytes3(bytes_per_request), bytes3(49 * bytes_per_request)) ELSE '' END)
              ELSE format('measured {:,} B per request, not 18 MiB', bpr_16bit) END
  FROM g512
  UNION ALL
  -- 2. "49+ requests fit without OOM": the count is a loop bound, far below what the memory holds.
  SELECT 'pressure-49-fit', 2, run_id,
         format('{} admitted ({}) on {}; ceiling allows {:,}, all free memory {:,}', max_requests_measured, stop_reason,
                device_name, ceiling_max_requests, theoretical_max_requests),
         CASE WHEN stop_reason = 'oom' AND max_requests_measured < 49 THEN $refuted
              WHEN max_requests_measured >= 49 THEN $expected
              WHEN device_kind <> 'cuda' THEN $not_measured
              WHEN ceiling_max_requests >= 49 THEN $expected
              ELSE $differs_by_hardware END,
         CASE WHEN stop_reason = 'oom' AND max_requests_measured < 49 THEN 'this device ran out of memory before 49 requests'
              WHEN max_requests_measured >= 49 THEN format('49 requests fit here without an OOM, as they must: they are {:.0f}% of the memory ceiling; the "+" is where the profiler write-up''s loop stopped, not a limit', 100 * 49 * bytes_per_request / ceiling_bytes)
              WHEN device_kind <> 'cuda' THEN format('CPU run: its {:.2f} GiB ceiling is a safety limit, not a device''s memory, and it stopped at its {} after {} requests', ceiling_bytes / 2 ^ 30, CASE stop_reason WHEN 'cap' THEN 'request cap' WHEN 'time' THEN 'time budget' ELSE stop_reason END, max_requests_measured)
              WHEN ceiling_max_requests >= 49 THEN format('this run stopped at its {} after {}; by its measured request size 49 requests are {:.0f}% of the ceiling', CASE stop_reason WHEN 'cap' THEN 'request cap' WHEN 'time' THEN 'time budget' ELSE stop_reason END, max_requests_measured, 100 * 49 * bytes_per_request / ceiling_bytes)
              ELSE 'the ceiling on this device holds fewer than 49 such requests' END
  FROM g512
  UNION ALL
  -- 3. "3.7x model size": KV of 49 requests / weights, both in the run's dtype.
  SELECT 'pressure-kv-vs-model', 3, run_id,
         format('49 x {:,} B / {:,} B weights = {:.2f}x', bytes_per_request, weight_bytes, 49 * bytes_per_request / weight_bytes),
         CASE WHEN round(49 * bytes_per_request / weight_bytes, 1) = 3.7 THEN $confirmed ELSE $refuted END,
         format('weights and cache in the same dtype ({}); KV passes the weights from request {} on', dtype, weight_bytes // bytes_per_request + 1)
  FROM g512
  UNION ALL
  -- 4. Theoretical max 414 x 512 and 828 x 256 from "7.5 GB available": do the numbers agree?
  SELECT 'pressure-theoretical-max', 4, NULL,
         format('7.5 GiB / 18 MiB = {}; 7.5 GB (SI) / 18 MiB = {}; 414 needs {:.2f} GiB free', max_gib, max_gb, free_for_414 / 2 ^ 30),
         -- Its own numbers, not a measurement, disagree: inconsistent, with the size of the gap.
         CASE WHEN 414 IN (max_gib, max_gb) THEN $confirmed ELSE $inconsistent END,
         CASE WHEN 414 IN (max_gib, max_gb) THEN '414 follows from 7.5 GB / 18 MiB'
              ELSE format('the profiler write-up''s own figures disagree: 414 does not follow from its 7.5 GB in either unit ({:+.1f}% / {:+.1f}%); it implies {:,.0f} MiB free. 828 {} 2 x 414 (256-token requests are half the size)',
                          100 * (414 / max_gib - 1), 100 * (414 / max_gb - 1), free_for_414 / 2 ^ 20,
                          CASE WHEN 828 = 2 * 414 THEN '=' ELSE '<>' END) END
  FROM seed_math
  UNION ALL
  SELECT 'pressure-theoretical-max', 4, a.run_id,
         format('{:,} x 512 and {} x 256 from {:,.1f} GiB free on {}', a.theoretical_max_requests,
                coalesce(format('{:,}', b.theoretical_max_requests), 'n/a'), a.free_bytes / 2 ^ 30, a.device_name),
         CASE WHEN abs(a.free_bytes / 2 ^ 30 - 7.5) <= 0.25 AND a.dtype_bytes = 2
              THEN CASE WHEN a.theoretical_max_requests = 414 THEN $confirmed ELSE $refuted END
              ELSE $differs_by_hardware END,
         format('free memory / measured request size; {}', CASE WHEN b.run_id IS NULL THEN 'no 256-token length in this run'
              ELSE format('256 tokens hold {:.2f}x as many (2x expected: half the bytes per request)', b.theoretical_max_requests / a.theoretical_max_requests) END)
  FROM g512 a LEFT JOIN g256 b USING (run_id)
),
unmeasured AS (  -- claims with no run row get one 'not measured' row
  -- (the 882 MB and 414 claims always have their arithmetic row, which carries the verdict)
  SELECT *, 'no gpt2 run in this DB measured 512-token requests (--quick sweeps stop at 128 tokens)' AS reasoning
  FROM (VALUES ('pressure-49-fit', 2), ('pressure-kv-vs-model', 3)) AS m(claim_id, ord)
  WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = m.claim_id AND c.run_id IS NOT NULL)
),
text AS (
  SELECT * FROM (VALUES
    ('pressure-49x512-bytes', 'seq=512: 49 requests hold 882 MB of KV cache (GPT-2)', '882 MB for 49 x 512 tokens'),
    ('pressure-49-fit', 'seq=512: 49+ requests fit beside GPT-2 on an 8 GB card without OOM', '49+ requests'),
    ('pressure-kv-vs-model', '49 x 512-token requests are 3.7x the model size', '3.7x model size'),
    ('pressure-theoretical-max', 'Theoretical max: 414 requests x 512 tokens, 828 x 256 (7.5 GB available for KV)', '414 x 512, 828 x 256')
  ) AS t(claim_id, claim, seed_value)
),
{include:_claim_ledger}
SELECT claim_id, 'profiler seed' AS source, claim, seed_value, 'RTX 2070 8 GB (GPT-2, float16)' AS seed_hardware,
       -- Request sizes and their ratio to the weights are tensor bytes (exact anywhere); how many requests fit
       -- and how much memory is free are properties of the GPU.
       CASE WHEN claim_id = 'pressure-49-fit' OR (claim_id = 'pressure-theoretical-max' AND run_id IS NOT NULL)
            THEN 'measurement' ELSE 'arithmetic' END AS basis,
       true AS claim_on_gpu, run_id, measured_value, verdict, reasoning
FROM ledger
ORDER BY ord, run_id NULLS FIRST;
