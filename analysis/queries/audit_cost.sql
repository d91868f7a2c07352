-- One audit's bill: what its priced calls cost, by token class; what could not be priced (and why); where the
-- rates came from and their snapshot date; the what-if of prefix caching against no caching; and idle KV
-- memory in GPU-hours and dollars (with --gpu-hour-price). Savings are shares of the no-caching cost of the
-- same calls. NULL everywhere for audits made before pricing existed (schema < 5).
SELECT audit_id, audit_id LIKE 'run-%-demo' AS is_demo, n_calls, cost_usd, input_cost_usd, cache_read_cost_usd,
       cache_write_cost_usd, output_cost_usd, priced_calls, unpriced_calls, unpriced_models, price_source,
       price_snapshot_date, whatif_calls, whatif_nocache_usd, whatif_actual_usd, whatif_achievable_usd,
       whatif_stable_usd, whatif_achievable_pcer, whatif_stable_pcer, whatif_reason,
       1 - whatif_actual_usd / nullif(whatif_nocache_usd, 0) AS actual_saving,
       1 - whatif_achievable_usd / nullif(whatif_nocache_usd, 0) AS achievable_saving,
       1 - whatif_stable_usd / nullif(whatif_nocache_usd, 0) AS stable_saving,
       gpu_hour_price_usd, idle_gpu_hours, idle_cost_usd, gpu_cost_reason
FROM audits
WHERE audit_id = $audit_id;
