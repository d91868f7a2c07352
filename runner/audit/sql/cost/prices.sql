-- The rates each price row applied, with the calls, tokens and dollars it priced (cost/price_parts.sql, summed
-- over the shares of the calls they were counted in). The audit's totals and its cost by model come from these rows.
INSERT INTO token_prices BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, p.provider_name, p.model, p.valid_from, p.valid_to,
       p.above_input_tokens, p.upto_input_tokens, p.input_usd_mtok, p.cache_read_usd_mtok, p.cache_write_usd_mtok,
       p.output_usd_mtok, p.request_usd, p.price_source, p.snapshot_date, p.matched_provider, p.matched_model,
       p.unknown_reason, s.n_calls, s.input_tokens, s.cached_input_tokens, s.cache_creation_input_tokens,
       s.output_tokens, s.cost_usd
FROM _price_rows p
JOIN (SELECT row_id, sum(n_calls) AS n_calls, sum(input_tokens) AS input_tokens,
             sum(cached_input_tokens) AS cached_input_tokens,
             sum(cache_creation_input_tokens) AS cache_creation_input_tokens, sum(output_tokens) AS output_tokens,
             sum(cost_usd) AS cost_usd
      FROM _price_parts GROUP BY row_id) s USING (row_id)
ORDER BY s.cost_usd DESC NULLS LAST, p.model, p.valid_from NULLS FIRST, p.above_input_tokens NULLS FIRST;
