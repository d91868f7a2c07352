-- The calls, tokens and dollars each price row priced: one small GROUP BY over the calls (an integer key). One
-- row per price row and share of the calls (all of them in one process; one partition of sessions in
-- runner/audit/distributed.py); cost/prices.sql sums them.
CREATE OR REPLACE TEMP TABLE _price_parts AS
SELECT row_id, count(*) AS n_calls, sum(input_tokens) AS input_tokens,
       sum(coalesce(cached_input_tokens, 0)) AS cached_input_tokens,
       sum(coalesce(cache_creation_input_tokens, 0)) AS cache_creation_input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + request_usd) AS cost_usd
FROM _calls_rated GROUP BY row_id;
