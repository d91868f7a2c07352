-- One scan comparing every call with the first call's key (no hashing of three strings per call): how many
-- calls differ from it, and the calls' count and time span.
SELECT count(*) FILTER (WHERE NOT (provider_name IS NOT DISTINCT FROM $provider_name
                                   AND response_model IS NOT DISTINCT FROM $response_model
                                   AND request_model IS NOT DISTINCT FROM $request_model)),
       count(*), min(t), max(t), bool_or(t IS NULL)
FROM (SELECT *, coalesce(start_time, end_time) AS t FROM _calls);
