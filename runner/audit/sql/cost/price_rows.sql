-- The rates of each (provider, logged models) key of the audit, one row per price period and input tier,
-- looked up once in Python (runner/audit/dollars.py price_table) and inserted by cost/price_row.sql.
CREATE OR REPLACE TEMP TABLE _price_rows (
  row_id INTEGER, provider_name VARCHAR, response_model VARCHAR, request_model VARCHAR, model VARCHAR,
  known BOOLEAN, untimed BOOLEAN, valid_from TIMESTAMP, valid_to TIMESTAMP, above_input_tokens BIGINT,
  upto_input_tokens BIGINT, input_usd_mtok DOUBLE, cache_read_usd_mtok DOUBLE, cache_write_usd_mtok DOUBLE,
  output_usd_mtok DOUBLE, request_usd DOUBLE, price_source VARCHAR, snapshot_date DATE,
  matched_provider VARCHAR, matched_model VARCHAR, unknown_reason VARCHAR);
