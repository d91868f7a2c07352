-- Dollars per call, from the one price row (_price_rows, filled by runner/audit/cost.py: a few rows per
-- model, looked up once) that matches the call's provider and logged models, its time (price periods) and
-- its input size (tiers). Token counts follow OpenTelemetry (input_tokens = ALL input), so the uncached
-- part is input - cache reads - cache writes, whatever provider the call came from:
--   OpenAI    {"prompt_tokens": 1000, "cached_tokens": 900} -> input 1000, read 900, write 0 -> uncached 100
--   Anthropic {"input_tokens": 100, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 100}
--             -> input 1000 (the ingest added them up), read 800, write 100 -> uncached 100
-- A call whose row has no rates (a model no price table knows) gets NULL cost: unpriced, not free.
CREATE OR REPLACE TEMP VIEW _calls_rated AS
SELECT c.*, p.row_id, p.input_usd_mtok AS r_in, p.cache_read_usd_mtok AS r_read, p.cache_write_usd_mtok AS r_write,
       p.output_usd_mtok AS r_out, p.request_usd AS r_req, p.price_source AS p_source, p.snapshot_date AS p_date,
       (c.input_tokens - coalesce(c.cached_input_tokens, 0) - coalesce(c.cache_creation_input_tokens, 0))
         * p.input_usd_mtok / 1e6 AS input_cost_usd,
       coalesce(c.cached_input_tokens, 0) * p.cache_read_usd_mtok / 1e6 AS cache_read_cost_usd,
       coalesce(c.cache_creation_input_tokens, 0) * p.cache_write_usd_mtok / 1e6 AS cache_write_cost_usd,
       c.output_tokens * p.output_usd_mtok / 1e6 AS output_cost_usd
FROM token_calls c
LEFT JOIN _price_rows p
  ON p.provider_name IS NOT DISTINCT FROM c.provider_name
 AND p.response_model IS NOT DISTINCT FROM c.response_model
 AND p.request_model IS NOT DISTINCT FROM c.request_model
 AND CASE WHEN coalesce(c.start_time, c.end_time) IS NULL THEN p.untimed  -- untimed calls: today's price
          ELSE coalesce(c.start_time, c.end_time) >= coalesce(p.valid_from, '-infinity'::TIMESTAMP)
           AND coalesce(c.start_time, c.end_time) < coalesce(p.valid_to, 'infinity'::TIMESTAMP) END
 AND c.input_tokens > coalesce(p.above_input_tokens, -1)
 AND c.input_tokens <= coalesce(p.upto_input_tokens, 9223372036854775807);

-- What `persist` copies into the DB's token_calls: the call's own columns and its costs.
CREATE OR REPLACE TEMP VIEW _calls_priced AS
SELECT * EXCLUDE (row_id, r_in, r_read, r_write, r_out, r_req, p_source, p_date),
       input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + r_req AS cost_usd,
       p_source AS price_source, p_date AS price_snapshot_date
FROM _calls_rated;

-- Per session and per price row, in one pass over the calls. For the what-if (sql/cost_summary.sql) each
-- session also keeps what its input would cost all uncached, all read from the cache and all written to
-- it: any cached share p then costs p x read + (1 - p) x write + output, the rates of each call kept.
CREATE OR REPLACE TEMP TABLE _session_cost AS
SELECT session_id, row_id, count(*) AS n_calls,
       sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
       sum(cache_creation_input_tokens) AS cache_creation_input_tokens, sum(output_tokens) AS output_tokens,
       sum(input_cost_usd) AS input_cost_usd, sum(cache_read_cost_usd) AS cache_read_cost_usd,
       sum(cache_write_cost_usd) AS cache_write_cost_usd, sum(output_cost_usd) AS output_cost_usd,
       sum(input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + r_req) AS cost_usd,
       count(*) FILTER (WHERE r_in IS NULL) AS unpriced_calls,
       sum(input_tokens * r_in) / 1e6 AS all_uncached_usd,
       sum(input_tokens * r_read) / 1e6 AS all_read_usd,
       sum(input_tokens * r_write) / 1e6 AS all_write_usd,
       sum(output_tokens * r_out + r_req * 1e6) / 1e6 AS fixed_usd
FROM _calls_rated
GROUP BY GROUPING SETS ((session_id), (row_id));

-- A session with an unpriced call has no cost (a partial sum would read as the whole); its count says why.
UPDATE token_audit SET cost_usd = CASE WHEN s.unpriced_calls = 0 THEN s.cost_usd END, unpriced_calls = s.unpriced_calls
FROM _session_cost s
WHERE s.row_id IS NULL AND s.session_id = token_audit.session_id;

INSERT INTO token_prices BY NAME
SELECT $audit_id AS audit_id, $run_id AS run_id, p.provider_name, p.model, p.valid_from, p.valid_to,
       p.above_input_tokens, p.upto_input_tokens, p.input_usd_mtok, p.cache_read_usd_mtok, p.cache_write_usd_mtok,
       p.output_usd_mtok, p.request_usd, p.price_source, p.snapshot_date, p.matched_provider, p.matched_model,
       p.unknown_reason, s.n_calls, s.input_tokens, s.cached_input_tokens, s.cache_creation_input_tokens,
       s.output_tokens, s.cost_usd
FROM _price_rows p JOIN _session_cost s ON s.session_id IS NULL AND s.row_id = p.row_id
ORDER BY s.cost_usd DESC NULLS LAST, p.model, p.valid_from NULLS FIRST, p.above_input_tokens NULLS FIRST;
