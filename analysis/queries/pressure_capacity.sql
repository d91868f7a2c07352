-- Per run and sequence length: how many requests were admitted and why it stopped, the theoretical maximum
-- from free memory, the serving-engine capacity, and the KV cache's size next to the weights.
-- kv_over_weights: KV of every admitted request / weight bytes (same dtype);
-- requests_to_outweigh: the first request count whose KV exceeds the weights;
-- allocator_over_kv: allocator growth / cache tensor bytes (1.0 = no padding or pooling overhead).
SELECT c.run_id, r.model, r.dtype, r.device_kind, r.device_name, c.seq_len, c.max_requests_measured,
       c.stop_reason, c.request_cap, c.ceiling_fraction, c.free_bytes, c.ceiling_bytes, c.bytes_per_request,
       c.formula_bytes_per_request, c.bytes_per_request = c.formula_bytes_per_request AS formula_match,
       c.bytes_per_request / c.seq_len AS bytes_per_token,
       c.theoretical_max_requests, c.ceiling_max_requests, c.capacity_tokens, c.max_concurrency,
       c.kv_bytes, c.weight_bytes, c.kv_bytes / c.weight_bytes AS kv_over_weights,
       c.kv_bytes / (c.kv_bytes + c.weight_bytes) AS kv_share_of_kv_plus_weights,
       c.weight_bytes // c.bytes_per_request + 1 AS requests_to_outweigh,
       c.allocated_delta_bytes, c.allocated_delta_bytes / nullif(c.kv_bytes, 0) AS allocator_over_kv,
       c.prefill_overhead_bytes, c.kv_budget_bytes, c.memory_source, c.device_usable_after, c.elapsed_s,
       c.notes,
       -- a length where no request was admitted (the time budget ran out first) has no bytes per request to
       -- divide by: it says so, rather than a line of missing numbers
       CASE WHEN c.capacity_tokens IS NULL OR c.max_concurrency IS NULL
            THEN format('no {}-token request admitted before the {}: no capacity to compute', c.seq_len,
                        CASE c.stop_reason WHEN 'cap' THEN 'request cap' WHEN 'time' THEN 'time budget'
                                           WHEN 'ceiling' THEN 'memory ceiling' WHEN 'oom' THEN 'out-of-memory error'
                                           ELSE coalesce(c.stop_reason, 'run stopped') END)
            ELSE format('KV capacity {:,} tokens; max concurrency {:,.1f} requests at {} tokens', c.capacity_tokens,
                        c.max_concurrency, c.seq_len) END AS engine_line
FROM concurrent_capacity c JOIN runs r USING (run_id)
ORDER BY c.run_id, c.seq_len;
