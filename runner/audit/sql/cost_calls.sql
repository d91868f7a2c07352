-- Dollars per call, from the one price row (_price_rows, filled by runner/audit/cost.py: a few rows per
-- model, looked up once) that matches the call's provider and logged models, its time (price periods) and
-- its input size (tiers). Token counts follow OpenTelemetry (input_tokens = ALL input), so the uncached
-- part is input - cache reads - cache writes, whatever provider the call came from:
--   OpenAI    {"prompt_tokens": 1000, "cached_tokens": 900} -> input 1000, read 900, write 0 -> uncached 100
--   Anthropic {"input_tokens": 100, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 100}
--             -> input 1000 (the ingest added them up), read 800, write 100 -> uncached 100
-- A call whose row has no rates (a model no price table knows) gets NULL cost: unpriced, not free.
-- _calls_keyed (sql/cost_keyed*.sql) is each call with its price row's rates.
CREATE OR REPLACE TEMP VIEW _calls_rated AS
SELECT c.*,
       (c.input_tokens - coalesce(c.cached_input_tokens, 0) - coalesce(c.cache_creation_input_tokens, 0))
         * c.input_usd_mtok / 1e6 AS input_cost_usd,
       coalesce(c.cached_input_tokens, 0) * c.cache_read_usd_mtok / 1e6 AS cache_read_cost_usd,
       coalesce(c.cache_creation_input_tokens, 0) * c.cache_write_usd_mtok / 1e6 AS cache_write_cost_usd,
       c.output_tokens * c.output_usd_mtok / 1e6 AS output_cost_usd
FROM _calls_keyed c;

-- What `persist` copies into the DB's token_calls: the call's own columns and its costs.
CREATE OR REPLACE TEMP VIEW _calls_priced AS
SELECT * EXCLUDE (row_id, input_usd_mtok, cache_read_usd_mtok, cache_write_usd_mtok, output_usd_mtok, request_usd,
                  snapshot_date),
       input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + request_usd AS cost_usd,
       snapshot_date AS price_snapshot_date
FROM _calls_rated;

-- Token sums per session and price row: the one pass over the calls (only the join finds each call's row;
-- the optimizer leaves the per-call cost expressions out). Costs are linear in the tokens within a row, so
-- they are priced on the sums. For the what-if (sql/cost_summary.sql) each group also keeps what its input
-- would cost all uncached, all read from the cache and all written to it: any cached share p then costs
-- p x read + (1 - p) x write + output, every call at its own rates.
CREATE OR REPLACE TEMP TABLE _session_cost AS
WITH t AS (
  SELECT session_id, row_id, count(*) AS n_calls, sum(input_tokens) AS input_tokens,
         sum(coalesce(cached_input_tokens, 0)) AS cached_input_tokens,
         sum(coalesce(cache_creation_input_tokens, 0)) AS cache_creation_input_tokens,
         sum(output_tokens) AS output_tokens
  FROM _calls_rated
  GROUP BY session_id, row_id
)
SELECT t.*,
       (t.input_tokens - t.cached_input_tokens - t.cache_creation_input_tokens) * p.input_usd_mtok / 1e6
         AS input_cost_usd,
       t.cached_input_tokens * p.cache_read_usd_mtok / 1e6 AS cache_read_cost_usd,
       t.cache_creation_input_tokens * p.cache_write_usd_mtok / 1e6 AS cache_write_cost_usd,
       t.output_tokens * p.output_usd_mtok / 1e6 AS output_cost_usd,
       ((t.input_tokens - t.cached_input_tokens - t.cache_creation_input_tokens) * p.input_usd_mtok
        + t.cached_input_tokens * p.cache_read_usd_mtok + t.cache_creation_input_tokens * p.cache_write_usd_mtok
        + t.output_tokens * p.output_usd_mtok) / 1e6 + t.n_calls * p.request_usd AS cost_usd,
       CASE WHEN p.input_usd_mtok IS NULL THEN t.n_calls ELSE 0 END AS unpriced_calls,
       t.input_tokens * p.input_usd_mtok / 1e6 AS all_uncached_usd,
       t.input_tokens * p.cache_read_usd_mtok / 1e6 AS all_read_usd,
       t.input_tokens * p.cache_write_usd_mtok / 1e6 AS all_write_usd,
       t.output_tokens * p.output_usd_mtok / 1e6 + t.n_calls * p.request_usd AS fixed_usd
FROM t LEFT JOIN _price_rows p USING (row_id);

-- A session with an unpriced call has no cost (a partial sum would read as the whole); its count says why.
UPDATE token_audit SET cost_usd = CASE WHEN s.unpriced_calls = 0 THEN s.cost_usd END, unpriced_calls = s.unpriced_calls
FROM (SELECT session_id, sum(cost_usd) AS cost_usd, sum(unpriced_calls) AS unpriced_calls
      FROM _session_cost GROUP BY session_id) s
WHERE s.session_id = token_audit.session_id;

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
      FROM _session_cost GROUP BY row_id) s USING (row_id)
ORDER BY s.cost_usd DESC NULLS LAST, p.model, p.valid_from NULLS FIRST, p.above_input_tokens NULLS FIRST;
