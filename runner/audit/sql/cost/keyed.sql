-- Each call with its one price row: the row of its provider and logged models whose period holds the
-- call's time and whose tier holds its input size (rows of one model cover all times and sizes).
CREATE OR REPLACE TEMP MACRO kv_price_applies(t, n_input, untimed, valid_from, valid_to, above, upto) AS
  CASE WHEN t IS NULL THEN untimed  -- untimed calls: today's price
       ELSE t >= coalesce(valid_from, '-infinity'::TIMESTAMP) AND t < coalesce(valid_to, 'infinity'::TIMESTAMP) END
  AND n_input > coalesce(above, -1) AND n_input <= coalesce(upto, 9223372036854775807);

CREATE OR REPLACE TEMP VIEW _calls_keyed AS
SELECT c.*, p.row_id, p.input_usd_mtok, p.cache_read_usd_mtok, p.cache_write_usd_mtok, p.output_usd_mtok,
       p.request_usd, p.price_source, p.snapshot_date
FROM _calls c
LEFT JOIN _price_rows p
  ON p.provider_name IS NOT DISTINCT FROM c.provider_name
 AND p.response_model IS NOT DISTINCT FROM c.response_model
 AND p.request_model IS NOT DISTINCT FROM c.request_model
 AND kv_price_applies(coalesce(c.start_time, c.end_time), c.input_tokens, p.untimed, p.valid_from, p.valid_to,
                      p.above_input_tokens, p.upto_input_tokens);
