-- Schema version 12: a call's dollars are its tokens times its label's rates, computed where token_calls is
-- read, not stored per call. Every call of a label has the same price row (the label now includes its rates),
-- so the five per-call cost columns only repeated what the tokens and the label already say. They were
-- three fifths of a stored audit's bytes: at 4M calls, 121 MB of the file against 46 MB without them, and a
-- fifth of the time storing the calls took (issue 39).
-- The calls stored before this step keep the costs they were stored with: their table is renamed
-- token_call_rows_with_costs (their labels carry no rates), and token_calls reads both tables. Audits from
-- this version on write only token_call_rows.

DROP VIEW token_calls;
ALTER TABLE token_call_rows RENAME TO token_call_rows_with_costs;

-- One row per audited call: its numbers, and its label (whose rates price it).
CREATE TABLE token_call_rows (
    audit_id VARCHAR NOT NULL,
    run_id INTEGER,
    label_id INTEGER,
    line BIGINT,
    session_id VARCHAR,
    start_time TIMESTAMP,
    end_time TIMESTAMP,
    disconnected_at TIMESTAMP,
    input_tokens BIGINT,
    cached_input_tokens BIGINT,
    cache_creation_input_tokens BIGINT,
    output_tokens BIGINT,
    system_tokens BIGINT
);

-- The rates of the label's price row, in USD per million tokens (request_usd: per call); NULL where no price
-- table knows the model (its calls are unpriced, not free), and for the labels of calls stored before this step.
ALTER TABLE token_call_labels ADD COLUMN input_usd_mtok DOUBLE;
ALTER TABLE token_call_labels ADD COLUMN cache_read_usd_mtok DOUBLE;
ALTER TABLE token_call_labels ADD COLUMN cache_write_usd_mtok DOUBLE;
ALTER TABLE token_call_labels ADD COLUMN output_usd_mtok DOUBLE;
ALTER TABLE token_call_labels ADD COLUMN request_usd DOUBLE;

-- The calls as they always read: the same columns in the same order. The costs are the audit's own
-- expressions (runner/audit/sql/cost/rated_calls.sql), in the same order of operations, so they are the very
-- doubles an audit sums.
CREATE VIEW token_calls AS
SELECT audit_id, run_id, source, line, format, session_id, start_time, end_time, disconnected_at, provider_name,
       request_model, response_model, input_tokens, cached_input_tokens, cache_creation_input_tokens,
       output_tokens, system_tokens, system_tokens_source, input_cost_usd, cache_read_cost_usd,
       cache_write_cost_usd, output_cost_usd,
       input_cost_usd + cache_read_cost_usd + cache_write_cost_usd + output_cost_usd + request_usd AS cost_usd,
       price_source, price_snapshot_date
FROM (
  SELECT r.*, l.source, l.format, l.provider_name, l.request_model, l.response_model, l.system_tokens_source,
         l.price_source, l.price_snapshot_date, l.request_usd,
         (r.input_tokens - coalesce(r.cached_input_tokens, 0) - coalesce(r.cache_creation_input_tokens, 0))
           * l.input_usd_mtok / 1e6 AS input_cost_usd,
         coalesce(r.cached_input_tokens, 0) * l.cache_read_usd_mtok / 1e6 AS cache_read_cost_usd,
         coalesce(r.cache_creation_input_tokens, 0) * l.cache_write_usd_mtok / 1e6 AS cache_write_cost_usd,
         r.output_tokens * l.output_usd_mtok / 1e6 AS output_cost_usd
  FROM token_call_rows r
  LEFT JOIN token_call_labels l ON l.audit_id = r.audit_id AND l.label_id = r.label_id
)
UNION ALL
SELECT r.audit_id, r.run_id, l.source, r.line, l.format, r.session_id, r.start_time, r.end_time,
       r.disconnected_at, l.provider_name, l.request_model, l.response_model, r.input_tokens,
       r.cached_input_tokens, r.cache_creation_input_tokens, r.output_tokens, r.system_tokens,
       l.system_tokens_source, r.input_cost_usd, r.cache_read_cost_usd, r.cache_write_cost_usd, r.output_cost_usd,
       r.cost_usd, l.price_source, l.price_snapshot_date
FROM token_call_rows_with_costs r
LEFT JOIN token_call_labels l ON l.audit_id = r.audit_id AND l.label_id = r.label_id;
