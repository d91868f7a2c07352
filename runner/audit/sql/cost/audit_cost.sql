-- The audit's bill: totals from the per-price-row sums (sql/cost/prices.sql), which rates priced it, the
-- what-if of prefix caching, and the self-hosted view of idle KV memory.
--
-- What-if, on the sessions the prompt-bloat analysis covers (message content logged, --tokenizer given)
-- whose calls are all priced. With p a session's cached share of input:
--   no caching:   all input at the input rate                     (sum input x r_in)
--   actual:       what the log says was billed                    (the calls' cost)
--   achievable:   p = achievable_pcer, the prompts as sent with a perfect prefix cache
--   stable:       p = stable_prefix_pcer, every call extending the previous prompt unchanged (the layout
--                 the article's "normalising prompt layouts" asks for)
-- Achievable and stable price the uncached part at the cache-WRITE rate: a prefix has to be written before
-- it can be read (Anthropic charges 1.25x input for that; OpenAI nothing extra, so its write rate is the
-- input rate). That slightly overstates their cost (a session's last new tokens need no write).
UPDATE audits SET
  cost_usd = t.cost_usd, input_cost_usd = t.input_cost_usd, cache_read_cost_usd = t.cache_read_cost_usd,
  cache_write_cost_usd = t.cache_write_cost_usd, output_cost_usd = t.output_cost_usd,
  priced_calls = t.priced_calls, unpriced_calls = audits.n_calls - t.priced_calls, unpriced_models = t.unpriced_models,
  price_source = t.price_source, price_snapshot_date = t.price_snapshot_date,
  whatif_calls = w.n_calls, whatif_nocache_usd = w.nocache, whatif_actual_usd = w.actual,
  whatif_achievable_usd = w.achievable, whatif_stable_usd = w.stable,
  whatif_achievable_pcer = w.achievable_pcer, whatif_stable_pcer = w.stable_pcer,
  whatif_reason = CASE
    WHEN w.n_bloat = 0 THEN coalesce(audits.bloat_reason, 'no session with logged message content')
    WHEN w.n_achievable = 0 THEN coalesce(audits.bloat_reason, 'achievable PCER needs --tokenizer')
    WHEN coalesce(w.n_calls, 0) = 0 THEN 'no session of the prompt-bloat analysis has all its calls priced'
    WHEN w.n_calls < audits.n_calls
      THEN format('covers {} of {} calls: the sessions with logged message content, all calls priced',
                  w.n_calls, audits.n_calls) END,
  gpu_hour_price_usd = $gpu_hour_price,
  idle_gpu_hours = audits.idle_kv_byte_seconds / nullif(audits.memory_bytes, 0) / 3600,
  idle_cost_usd = audits.idle_kv_byte_seconds / nullif(audits.memory_bytes, 0) / 3600 * $gpu_hour_price,
  gpu_cost_reason = CASE
    WHEN audits.idle_kv_byte_seconds IS NULL THEN 'no idle KV byte-seconds (the log has no times)'
    WHEN $gpu_hour_price IS NULL THEN 'give --gpu-hour-price to turn idle KV memory into dollars'
    ELSE format('memory-proportional: holding all {:.1f} GB of KV memory ({}) for one hour is one GPU-hour',
                audits.memory_bytes / 1e9, audits.memory_source) END,
  duration_s = audits.duration_s + $pricing_s
FROM (
  SELECT sum(p.cost_usd) AS cost_usd,
         sum((p.input_tokens - p.cached_input_tokens - p.cache_creation_input_tokens) * p.input_usd_mtok) / 1e6
           AS input_cost_usd,
         sum(p.cached_input_tokens * p.cache_read_usd_mtok) / 1e6 AS cache_read_cost_usd,
         sum(p.cache_creation_input_tokens * p.cache_write_usd_mtok) / 1e6 AS cache_write_cost_usd,
         sum(p.output_tokens * p.output_usd_mtok) / 1e6 AS output_cost_usd,
         coalesce(sum(p.n_calls) FILTER (WHERE p.input_usd_mtok IS NOT NULL), 0) AS priced_calls,
         string_agg(format('{} ({}): {} calls', coalesce(p.model, 'no model in the log'), coalesce(p.provider_name, 'no provider'),
                           p.n_calls), '; ' ORDER BY p.n_calls DESC, p.model) FILTER (WHERE p.input_usd_mtok IS NULL)
           AS unpriced_models,
         string_agg(DISTINCT p.price_source, '; ') FILTER (WHERE p.input_usd_mtok IS NOT NULL) AS price_source,
         min(p.snapshot_date) FILTER (WHERE p.input_usd_mtok IS NOT NULL) AS price_snapshot_date
  FROM token_prices p WHERE p.audit_id = $audit_id
) t, (
  SELECT sum(n_bloat) AS n_bloat, sum(n_achievable) AS n_achievable, sum(n_calls) AS n_calls,
         sum(nocache) AS nocache, sum(actual) AS actual, sum(achievable) AS achievable, sum(stable) AS stable,
         sum(achievable_input_tokens) / nullif(sum(input_tokens), 0) AS achievable_pcer,
         sum(stable_input_tokens) / nullif(sum(input_tokens), 0) AS stable_pcer
  FROM _whatif_parts  -- cost/whatif_parts.sql, summed over the shares of the sessions
) w
WHERE audits.audit_id = $audit_id;

-- The TTL sweep in GPU-hours and dollars: what evicting at each TTL frees.
UPDATE token_ttl_sweep SET
  freed_gpu_hours = freed_byte_seconds / nullif(memory_bytes, 0) / 3600,
  freed_cost_usd = freed_byte_seconds / nullif(memory_bytes, 0) / 3600 * $gpu_hour_price
WHERE audit_id = $audit_id;
