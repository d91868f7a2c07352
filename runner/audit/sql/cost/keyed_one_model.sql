-- The same as sql/cost/keyed.sql for an audit whose calls all name the same provider and models (one big
-- log of one model, the common case): no string comparison per call, only its period and tier.
CREATE OR REPLACE TEMP VIEW _calls_keyed AS
SELECT c.*, p.row_id, p.input_usd_mtok, p.cache_read_usd_mtok, p.cache_write_usd_mtok, p.output_usd_mtok,
       p.request_usd, p.price_source, p.snapshot_date
FROM _calls c
LEFT JOIN _price_rows p
  ON kv_price_applies(coalesce(c.start_time, c.end_time), c.input_tokens, p.untimed, p.valid_from, p.valid_to,
                      p.above_input_tokens, p.upto_input_tokens);
