-- One price row (runner/audit/dollars.py PriceRow, by name).
INSERT INTO _price_rows BY NAME
SELECT $row_id AS row_id, $provider_name AS provider_name, $response_model AS response_model,
       $request_model AS request_model, $model AS model, $known AS known, $untimed AS untimed,
       $valid_from AS valid_from, $valid_to AS valid_to, $above_input_tokens AS above_input_tokens,
       $upto_input_tokens AS upto_input_tokens, $input_usd_mtok AS input_usd_mtok,
       $cache_read_usd_mtok AS cache_read_usd_mtok, $cache_write_usd_mtok AS cache_write_usd_mtok,
       $output_usd_mtok AS output_usd_mtok, $request_usd AS request_usd, $price_source AS price_source,
       $snapshot_date AS snapshot_date, $matched_provider AS matched_provider, $matched_model AS matched_model,
       $unknown_reason AS unknown_reason;
