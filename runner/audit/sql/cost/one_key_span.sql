-- One scan comparing every call with the first call's key (no hashing of three strings per call): how many
-- calls differ from it, and the calls' count and time span; and how many differ from the first call in the rest
-- of its label (file, format, system-token source: store/label_parts.sql), so that one label can be told
-- without grouping the calls (dollars.price_keys).
SELECT count(*) FILTER (WHERE NOT (provider_name IS NOT DISTINCT FROM $provider_name
                                   AND response_model IS NOT DISTINCT FROM $response_model
                                   AND request_model IS NOT DISTINCT FROM $request_model)),
       count(*), min(t), max(t), bool_or(t IS NULL),
       count(*) FILTER (WHERE NOT (source IS NOT DISTINCT FROM $source AND format IS NOT DISTINCT FROM $format
                                   AND system_tokens_source IS NOT DISTINCT FROM $system_tokens_source))
FROM (SELECT *, coalesce(start_time, end_time) AS t FROM _calls);
