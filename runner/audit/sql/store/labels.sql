-- The audit's call labels (store/label_parts.sql, store/calls_labelled.sql), numbered in a fixed order.
CREATE OR REPLACE TEMP TABLE _call_labels AS
SELECT CAST(row_number() OVER (ORDER BY {label_order}) AS INTEGER) AS label_id, *
FROM (SELECT DISTINCT * FROM _label_parts);
