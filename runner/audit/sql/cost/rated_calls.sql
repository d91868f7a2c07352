-- Dollars per call, from the one price row (_price_rows, filled by runner/audit/dollars.py: a few rows per
-- model, looked up once) that matches the call's provider and logged models, its time (price periods) and
-- its input size (tiers). Token counts follow OpenTelemetry (input_tokens = ALL input), so the uncached
-- part is input - cache reads - cache writes, whatever provider the call came from:
--   OpenAI    {"prompt_tokens": 1000, "cached_tokens": 900} -> input 1000, read 900, write 0 -> uncached 100
--   Anthropic {"input_tokens": 100, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 100}
--             -> input 1000 (the ingest added them up), read 800, write 100 -> uncached 100
-- A call whose row has no rates (a model no price table knows) gets NULL cost: unpriced, not free.
-- _calls_keyed (sql/cost/keyed*.sql) is each call with its price row's rates. sql/metrics/per_session.sql sums these
-- costs per session with its other figures (one pass over the calls).
CREATE OR REPLACE TEMP VIEW _calls_rated AS
SELECT c.*,
       (c.input_tokens - coalesce(c.cached_input_tokens, 0) - coalesce(c.cache_creation_input_tokens, 0))
         * c.input_usd_mtok / 1e6 AS input_cost_usd,
       coalesce(c.cached_input_tokens, 0) * c.cache_read_usd_mtok / 1e6 AS cache_read_cost_usd,
       coalesce(c.cache_creation_input_tokens, 0) * c.cache_write_usd_mtok / 1e6 AS cache_write_cost_usd,
       c.output_tokens * c.output_usd_mtok / 1e6 AS output_cost_usd
FROM _calls_keyed c;

-- What `persist` copies into the DB: each call's own columns (token_call_rows) and its label's, the price row's
-- rates among them (token_call_labels): the DB's token_calls view prices the call from those rates with the
-- expressions above, so no per-call cost is stored (schema step 012).
CREATE OR REPLACE TEMP VIEW _calls_priced AS
SELECT * EXCLUDE (row_id, snapshot_date), snapshot_date AS price_snapshot_date
FROM _calls_keyed;
