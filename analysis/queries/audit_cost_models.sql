-- One audit's cost by model (provider and model as the log names them), from the rates it was priced with
-- (token_prices: one row per model, price period and input tier). A model no price table knows is listed
-- with its calls and why, and no cost.
SELECT coalesce(model, '(no model in the log)') AS model, coalesce(provider_name, '–') AS provider,
       string_agg(DISTINCT matched_model, ', ') AS priced_as,
       sum(n_calls) AS n_calls, sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
       sum(cache_creation_input_tokens) AS cache_write_tokens, sum(output_tokens) AS output_tokens,
       sum(cost_usd) AS cost_usd, sum(cost_usd) / nullif(sum(n_calls), 0) AS usd_per_call,
       sum((input_tokens - cached_input_tokens - cache_creation_input_tokens) * input_usd_mtok) / 1e6 AS input_cost_usd,
       sum(cached_input_tokens * cache_read_usd_mtok) / 1e6 AS cache_read_cost_usd,
       sum(cache_creation_input_tokens * cache_write_usd_mtok) / 1e6 AS cache_write_cost_usd,
       sum(output_tokens * output_usd_mtok) / 1e6 AS output_cost_usd,
       CASE WHEN min(input_usd_mtok) = max(input_usd_mtok) THEN min(input_usd_mtok) END AS input_usd_mtok,
       CASE WHEN min(cache_read_usd_mtok) = max(cache_read_usd_mtok) THEN min(cache_read_usd_mtok) END
         AS cache_read_usd_mtok,
       CASE WHEN min(output_usd_mtok) = max(output_usd_mtok) THEN min(output_usd_mtok) END AS output_usd_mtok,
       count(*) AS price_rows, bool_and(input_usd_mtok IS NULL) AS unpriced,
       coalesce(any_value(unknown_reason), string_agg(DISTINCT price_source, '; ')) AS note
FROM token_prices
WHERE audit_id = $audit_id
GROUP BY model, provider_name
ORDER BY sum(cost_usd) DESC NULLS LAST, sum(n_calls) DESC, model;
