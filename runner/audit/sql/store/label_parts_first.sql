-- store/label_parts.sql where every call is known to have the first call's label (dollars.price_keys: one key, one
-- file, format and system-token source, one price row for every call): that label, without grouping the calls.
CREATE OR REPLACE TEMP TABLE _label_parts AS
SELECT hash({label_columns}) AS label_hash, {label_columns}
FROM (SELECT {label_columns} FROM _calls_priced LIMIT 1);
