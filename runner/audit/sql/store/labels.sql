-- The audit's call labels (store/label_parts.sql, store/calls_labelled.sql), numbered in a fixed order.
CREATE OR REPLACE TEMP TABLE _call_labels AS
SELECT CAST(row_number() OVER (ORDER BY source NULLS FIRST, format NULLS FIRST, provider_name NULLS FIRST,
                                        request_model NULLS FIRST, response_model NULLS FIRST,
                                        system_tokens_source NULLS FIRST, price_source NULLS FIRST,
                                        price_snapshot_date NULLS FIRST) AS INTEGER) AS label_id, *
FROM (SELECT DISTINCT * FROM _label_parts);
